"""The PyTorch peer of bench/bert/bert_train_bench.cc: transformers'
BertForPreTraining at the same size (tanh GELU "gelu_new", LayerNorm epsilon
1e-12, dropout on), in training mode, on the batch the C++ side wrote (a
safetensors file with the seven BERT inputs). One step is the forward, the
reference's losses (sum(w * nll) / (sum(w) + 1e-5) plus the mean
next-sentence cross-entropy) and the backward; the optimizer is not timed,
as on our side. Warm-up steps, then the median of STEPS steps.

Two variants, one line each on stdout, "<variant> <median> <min> <max>" in
seconds per step (per-step times go to stderr):
  gathered  the masked-LM head on the masked rows only, as the MLPerf
            reference and our model do (same work as ours);
  stock     BertForPreTraining.forward as shipped: the masked-LM head on
            every token, then the masked rows are picked out of its logits.
PRECISION bf16 runs the forward and the losses under torch.autocast (bf16 on
the CPU), the backward outside it, as PyTorch recommends; fp32 runs without.
Run with /usr/bin/python3 (Debian's PyTorch, transformers from pip).

usage: bert_torch_bench.py BATCH_FILE THREADS WARMUP STEPS VOCAB HIDDEN LAYERS HEADS
                           INTERMEDIATE POSITIONS DROPOUT VARIANT[,VARIANT] [PRECISION]
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForPreTraining

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "tools"))
from safetensors_io import read  # noqa: E402


def losses(mlm_logits, nsp_logits, batch):
    labels = batch["masked_lm_ids"].reshape(-1)
    weights = batch["masked_lm_weights"].reshape(-1)
    nll = -F.log_softmax(mlm_logits, dim=-1).gather(1, labels.unsqueeze(1)).squeeze(1)
    mlm = (weights * nll).sum() / (weights.sum() + 1e-5)
    return mlm + F.cross_entropy(nsp_logits, batch["next_sentence_labels"])


def step(model, batch, variant, bf16):
    model.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = forward(model, batch, variant)
    loss.backward()
    return loss


def forward(model, batch, variant):
    positions = batch["masked_lm_positions"]
    rows = torch.arange(positions.shape[0]).unsqueeze(1).expand_as(positions)
    inputs = dict(input_ids=batch["input_ids"], token_type_ids=batch["segment_ids"],
                  attention_mask=batch["input_mask"])
    if variant == "stock":
        out = model(**inputs)
        mlm = out.prediction_logits[rows, positions].reshape(-1, out.prediction_logits.shape[-1])
        nsp = out.seq_relationship_logits
    else:
        sequence, pooled = model.bert(**inputs)[:2]
        mlm = model.cls.predictions(sequence[rows, positions].reshape(-1, sequence.shape[-1]))
        nsp = model.cls.seq_relationship(pooled)
    return losses(mlm, nsp, batch)


def main():
    batch_path = sys.argv[1]
    threads, warmup, steps, vocab, hidden, layers, heads, intermediate, positions = (
        int(a) for a in sys.argv[2:11])
    dropout = float(sys.argv[11])
    variants = sys.argv[12].split(",")
    precision = sys.argv[13] if len(sys.argv) > 13 else "fp32"
    assert precision in ("fp32", "bf16"), precision
    assert set(variants) <= {"gathered", "stock"}, variants
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate,
                        max_position_embeddings=positions, type_vocab_size=2,
                        hidden_act="gelu_new", hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout, layer_norm_eps=1e-12)
    model = BertForPreTraining(config).train()
    if precision == "bf16":
        # PyTorch 1.13's CPU autocast leaves layer_norm off its fp32 list, and
        # the masked-LM head's LayerNorm then fails on its bf16 input; run it
        # in fp32, as autocast does on a GPU (and as ours does).
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.register_forward_pre_hook(lambda _, args: tuple(a.float() for a in args))
    batch = {name: t if t.dtype == torch.float32 else t.long()
             for name, t in read(batch_path).items()}
    for variant in variants:
        times = []
        for i in range(warmup + steps):
            start = time.perf_counter()
            loss = step(model, batch, variant, precision == "bf16")
            seconds = time.perf_counter() - start
            if i >= warmup:
                times.append(seconds)
            kind = "warm-up" if i < warmup else "step"
            print(f"  torch {variant} {kind} {i}: {seconds:.3f} s  loss {loss.item():.5f}",
                  file=sys.stderr, flush=True)
        print(variant, statistics.median(times), min(times), max(times), flush=True)


if __name__ == "__main__":
    main()
