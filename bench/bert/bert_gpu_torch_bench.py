"""PyTorch peer for bench/bert/bert_gpu_bench.cc.

Times a BERT-Large pretraining step (forward with the masked-LM loss on the
76 masked rows per sample and the next-sentence loss, backward, optimizer) at
sequence 512 on the current CUDA device. The network: transformers'
BertForPreTraining (tanh GELU) when transformers is installed, else the same
post-LN network from torch.nn (TransformerEncoderLayer, tied decoder).
PyTorch has no LAMB: fused AdamW stands in (one pass over the parameters,
as LAMB's). Two precisions: AMP bf16 autocast and fp32 with TF32 off. CUDA
events around each step after a warm-up; prints "<name> <median ms per
step>" per line. Exits quietly when torch or CUDA is missing.

usage: bert_gpu_torch_bench.py BATCH STEPS
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

VOCAB, HIDDEN, LAYERS, HEADS, FFN, SEQ, PREDICTIONS = 30522, 1024, 24, 16, 4096, 512, 76


class TorchNnBert(nn.Module):
    """BERT-Large for pretraining from torch.nn (post-LN, tanh GELU)."""

    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(VOCAB, HIDDEN)
        self.position = nn.Embedding(SEQ, HIDDEN)
        self.token_type = nn.Embedding(2, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        layer = nn.TransformerEncoderLayer(HIDDEN, HEADS, FFN, dropout=0.1,
                                           activation=lambda x: F.gelu(x, approximate="tanh"),
                                           layer_norm_eps=1e-12, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.pooler = nn.Linear(HIDDEN, HIDDEN)
        self.nsp = nn.Linear(HIDDEN, 2)
        self.transform = nn.Linear(HIDDEN, HIDDEN)
        self.transform_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.mlm_bias = nn.Parameter(torch.zeros(VOCAB))

    def forward(self, ids, segments, mask, rows):
        positions = torch.arange(ids.shape[1], device=ids.device)
        h = self.norm(self.word(ids) + self.position(positions) + self.token_type(segments))
        h = self.encoder(F.dropout(h, 0.1, self.training), src_key_padding_mask=mask == 0)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        gathered = h.reshape(-1, HIDDEN)[rows]
        t = self.transform_norm(F.gelu(self.transform(gathered), approximate="tanh"))
        return t @ self.word.weight.t() + self.mlm_bias, self.nsp(pooled)


def make_model():
    try:
        from transformers import BertConfig, BertForPreTraining
    except ImportError:
        return "torchnn", TorchNnBert()
    config = BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                        num_attention_heads=HEADS, intermediate_size=FFN,
                        max_position_embeddings=SEQ, hidden_act="gelu_new",
                        layer_norm_eps=1e-12)
    return "transformers", BertForPreTraining(config)


def time_steps(batch, steps, amp):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    kind, model = make_model()
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
    gen = torch.Generator(device="cuda").manual_seed(7)
    ids = torch.randint(0, VOCAB, (batch, SEQ), device="cuda", generator=gen)
    segments = (torch.arange(SEQ, device="cuda") >= SEQ // 2).long().expand(batch, SEQ)
    mask = torch.ones(batch, SEQ, device="cuda")
    positions = torch.randint(0, SEQ, (batch, PREDICTIONS), device="cuda", generator=gen)
    rows = (positions + torch.arange(batch, device="cuda").unsqueeze(1) * SEQ).reshape(-1)
    labels = torch.randint(0, VOCAB, (batch * PREDICTIONS,), device="cuda", generator=gen)
    nsp_labels = torch.randint(0, 2, (batch,), device="cuda", generator=gen)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            if kind == "transformers":
                sequence, pooled = model.bert(input_ids=ids, token_type_ids=segments,
                                              attention_mask=mask)[:2]
                mlm = model.cls.predictions(sequence.reshape(-1, HIDDEN)[rows])
                nsp = model.cls.seq_relationship(pooled)
            else:
                mlm, nsp = model(ids, segments, mask, rows)
            loss = F.cross_entropy(mlm.float(), labels) + F.cross_entropy(nsp.float(), nsp_labels)
        loss.backward()
        opt.step()

    ms = median_step_ms(step, steps, warmup=3)
    del model, opt
    torch.cuda.empty_cache()
    return kind, ms


def main():
    if not torch.cuda.is_available():
        return
    batch, steps = int(sys.argv[1]), int(sys.argv[2])
    for amp in (True, False):
        kind, ms = time_steps(batch, steps, amp)
        print(f"{kind}_{'amp_bf16' if amp else 'fp32'}_adamw", ms, flush=True)


if __name__ == "__main__":
    main()
