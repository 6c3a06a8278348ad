"""PyTorch peer for bench/llm/llama_gpu_bench.cc.

Times a training step (forward with the next-token loss over the whole
vocabulary, backward; no optimizer) of a stack of Llama 3.1 8B layers, batch
1, on the current CUDA device: PyTorch's own modules (RMSNorm, rotary
positions, grouped query heads, SwiGLU, untied output layer) with its fused
F.scaled_dot_product_attention (causal), in bf16 (weights and activations)
and in fp32 with TF32 off. With LORA, Llama 2 70B-shaped layers fine-tuned
as the MLPerf reference does it: the base frozen, adapters of rank 16 (alpha
32, dropout 0.1) on the fused qkv projection and o_proj, peft's arithmetic
(scale x B A dropout(x)) written out, so that transformers and peft are not
needed on the GPU machine. Prints "<name> <median ms per step>" per line;
exits quietly without torch or CUDA.

usage: llama_gpu_torch_bench.py LAYERS SEQ STEPS [lora]
"""
import os
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from cuda_timing import median_step_ms  # noqa: E402

VOCAB, HIDDEN, HEADS, KV_HEADS, FFN, THETA = 128256, 4096, 32, 8, 14336, 500000.0
LORA_RANK = 0  # > 0: the LoRA fine-tuning step (main sets the 70B shapes)


class Adapter(nn.Module):
    """peft's LoRA term on a frozen projection: scale x B A dropout(x)."""

    def __init__(self, width_in, width_out, rank=16, alpha=32.0, dropout=0.1):
        super().__init__()
        self.a = nn.Parameter(torch.randn(rank, width_in) / width_in ** 0.5)
        self.b = nn.Parameter(torch.zeros(width_out, rank))
        self.scale, self.dropout = alpha / rank, dropout

    def forward(self, x):
        return F.linear(F.linear(F.dropout(x, self.dropout), self.a), self.b) * self.scale


class RMSNorm(nn.Module):  # nn.RMSNorm arrived in PyTorch 2.4
    def __init__(self, width, eps=1e-5):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(width)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_dim = HIDDEN // HEADS
        self.norm1, self.norm2 = RMSNorm(HIDDEN), RMSNorm(HIDDEN)
        self.q = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.kv = nn.Linear(HIDDEN, 2 * KV_HEADS * self.head_dim, bias=False)
        self.o = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.gate_up = nn.Linear(HIDDEN, 2 * FFN, bias=False)
        self.down = nn.Linear(FFN, HIDDEN, bias=False)
        if LORA_RANK:
            self.requires_grad_(False)  # the frozen base
            kv_width = 2 * KV_HEADS * self.head_dim
            self.qkv_lora = Adapter(HIDDEN, HIDDEN + kv_width, LORA_RANK)
            self.o_lora = Adapter(HIDDEN, HIDDEN, LORA_RANK)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        n = self.norm1(x)
        q, kv = self.q(n), self.kv(n)
        if LORA_RANK:
            delta = self.qkv_lora(n)
            q, kv = q + delta[..., :HIDDEN], kv + delta[..., HIDDEN:]
        q = q.view(b, s, HEADS, self.head_dim).transpose(1, 2)
        k, v = kv.view(b, s, 2, KV_HEADS, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k = k.repeat_interleave(HEADS // KV_HEADS, dim=1)
        v = v.repeat_interleave(HEADS // KV_HEADS, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
        a = a.reshape(b, s, HIDDEN)
        x = x + self.o(a) + (self.o_lora(a) if LORA_RANK else 0)
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


def rotate(x, cos, sin):
    a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


def main():
    if not torch.cuda.is_available() or not hasattr(F, "scaled_dot_product_attention"):
        sys.exit(0)  # no GPU, or a PyTorch before 2.0 (no SDPA)
    global VOCAB, HIDDEN, HEADS, KV_HEADS, FFN, THETA, LORA_RANK
    layers, seq, steps = (int(a) for a in sys.argv[1:4])
    if sys.argv[4:] == ["lora"]:  # Llama 2 70B's shapes, its adapters
        VOCAB, HIDDEN, HEADS, KV_HEADS, FFN, THETA, LORA_RANK = \
            32000, 8192, 64, 8, 28672, 10000.0, 16
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        torch.manual_seed(1)
        embed = nn.Embedding(VOCAB, HIDDEN).cuda().to(dtype)
        stack = nn.ModuleList(Layer() for _ in range(layers)).cuda().to(dtype)
        norm = RMSNorm(HIDDEN).cuda().to(dtype)
        head = nn.Linear(HIDDEN, VOCAB, bias=False).cuda().to(dtype)
        for frozen in (embed, norm, head):
            frozen.requires_grad_(not LORA_RANK)
        inv = 1.0 / THETA ** (torch.arange(0, HIDDEN // HEADS, 2, device="cuda") / (HIDDEN // HEADS))
        angles = torch.arange(seq, device="cuda")[:, None] * inv[None]
        cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
        tokens = torch.randint(0, VOCAB, (1, seq), device="cuda")
        labels = torch.randint(0, VOCAB, (1, seq), device="cuda")

        def step():
            x = embed(tokens)
            for layer in stack:
                x = layer(x, cos, sin)
            logits = head(norm(x)).float()
            F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1)).backward()

        try:
            print(name, median_step_ms(step, steps, warmup=2), flush=True)
        except torch.cuda.OutOfMemoryError:
            print(f"  (torch {name}: out of memory)", file=sys.stderr)
        del embed, stack, norm, head
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
