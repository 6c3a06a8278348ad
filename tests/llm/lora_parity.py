"""Hugging Face transformers + peft oracle for tests/llm/lora_test.cc.

Builds transformers' LlamaForCausalLM at the size given (eager attention,
plain rotary frequencies), loads the C++ model's base weights by name, and,
for the MLPerf reference's layout (FUSED=1), merges each layer's q_proj,
k_proj and v_proj into one qkv_proj as the reference's fused-qkv checkpoint
has it. Then peft's PeftModel.from_pretrained loads the adapters the C++
side saved (adapter_model.safetensors + adapter_config.json) and one batch
runs forward and backward. Writes the logits, the mean next-token
cross-entropy and every adapter's gradient under the C++ names, in fp32 and
in fp64 (prefix f64/). Run with /usr/bin/python3.

usage: lora_parity.py WEIGHTS ADAPTERS BATCH OUTPUT VOCAB HIDDEN LAYERS HEADS KV_HEADS
       INTERMEDIATE SEQ THETA FUSED
"""
import os
import sys

import torch
from peft import PeftModel
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read, write  # noqa: E402
from oracle_pass import forward_backward_record  # noqa: E402


class Part(torch.nn.Module):
    """Columns [start, end) of the attention's fused qkv_proj output."""

    def __init__(self, attention, start, end):
        super().__init__()
        object.__setattr__(self, "attention", attention)  # not a submodule
        self.start, self.end = start, end

    def forward(self, x):
        return self.attention.qkv_proj(x)[..., self.start:self.end]


def fuse_qkv(attention):
    q, k, v = attention.q_proj, attention.k_proj, attention.v_proj
    nq, nk = q.out_features, k.out_features
    qkv = torch.nn.Linear(q.in_features, nq + 2 * nk, bias=False)
    qkv.weight.data = torch.cat([q.weight.data, k.weight.data, v.weight.data])
    del attention.q_proj, attention.k_proj, attention.v_proj
    attention.qkv_proj = qkv
    attention.q_proj = Part(attention, 0, nq)
    attention.k_proj = Part(attention, nq, nq + nk)
    attention.v_proj = Part(attention, nq + nk, nq + 2 * nk)


def main():
    weights_path, adapters, batch_path, out_path = sys.argv[1:5]
    vocab, hidden, layers, heads, kv_heads, intermediate, seq = map(int, sys.argv[5:12])
    theta, fused = float(sys.argv[12]), sys.argv[13] == "1"
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads,
                         intermediate_size=intermediate, max_position_embeddings=seq,
                         rms_norm_eps=1e-5, rope_theta=theta, tie_word_embeddings=False,
                         attention_bias=False, attn_implementation="eager")
    model = LlamaForCausalLM(config)
    base = {k: v.float() for k, v in read(weights_path).items() if ".lora_" not in k}
    model.load_state_dict(base, strict=True)
    if fused:
        for layer in model.model.layers:
            fuse_qkv(layer.self_attn)
    model = PeftModel.from_pretrained(model, adapters, is_trainable=True).train()
    batch = read(batch_path)
    tokens, labels = batch["tokens"].long(), batch["labels"].long()

    def adapter_gradients(m):
        grads = {}
        for name, p in m.named_parameters():
            if p.grad is None:
                continue
            assert ".lora_" in name, f"a base parameter was trained: {name}"
            grads[name.removeprefix("base_model.model.").replace(".default", "")] = p.grad.clone()
        return grads

    write(out_path, forward_backward_record(model, tokens, labels, vocab, adapter_gradients))


if __name__ == "__main__":
    main()
