"""Hugging Face transformers oracle for tests/bert/bert_parity_test.cc.

Builds transformers' BertForPreTraining (the field's standard BERT) at the
size given, with the reference's tanh GELU ("gelu_new"), LayerNorm epsilon
1e-12 and dropout off, loads the C++ model's safetensors weights (our fused
attention.qkv split into query, key and value; the decoder tied to the word
embeddings as in both models), runs one batch and writes the masked-LM logits
at the masked positions, the next-sentence logits, the reference's losses
(sum(w * nll) / (sum(w) + 1e-5) and the mean next-sentence cross-entropy) and
every parameter gradient under our names, in fp32 and in fp64 (prefix f64/).
A batch with `positions` holds packed rows: each token attends to its own
sequence's tokens (a 3-D attention mask from the sequence ids in
input_mask), positions restart, and the pooler and next-sentence head run on
each sequence's first token, the loss sum(w * nll) / (sum(w) + 1e-5).
Run with /usr/bin/python3 (Debian's python3-torch, transformers from pip).

usage: bert_parity.py WEIGHTS BATCH OUTPUT VOCAB HIDDEN LAYERS HEADS INTERMEDIATE POSITIONS
"""
import os
import sys

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForPreTraining

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read, write  # noqa: E402

QKV = ("query", "key", "value")


def to_hf(ours, layers):
    """Our parameter names and tensors -> transformers' state_dict."""
    hf = {}
    for name, t in ours.items():
        hf[name.replace(".attention.output.weight", ".attention.output.dense.weight")
               .replace(".attention.output.bias", ".attention.output.dense.bias")] = t
    for i in range(layers):
        prefix = f"bert.encoder.layer.{i}.attention."
        for kind in ("weight", "bias"):
            fused = hf.pop(prefix + "qkv." + kind)
            for part, t in zip(QKV, fused.chunk(3, dim=0)):
                hf[prefix + "self." + part + "." + kind] = t
    return hf


def our_gradients(model, layers):
    grads = {}
    for name, p in model.named_parameters():
        # A copy: converting the model to fp64 later rewrites .grad in place.
        grads[name.replace(".attention.output.dense.", ".attention.output.")] = p.grad.clone()
    for i in range(layers):
        prefix = f"bert.encoder.layer.{i}.attention."
        for kind in ("weight", "bias"):
            parts = [grads.pop(prefix + "self." + q + "." + kind) for q in QKV]
            grads[prefix + "qkv." + kind] = torch.cat(parts, dim=0)
    return grads


def weighted_nll(logits, labels, weights):
    nll = -F.log_softmax(logits, dim=-1).gather(1, labels.unsqueeze(1)).squeeze(1)
    return (weights * nll).sum() / (weights.sum() + 1e-5)


def run(model, batch, dtype):
    model = model.to(dtype)
    model.zero_grad()
    packed = "positions" in batch
    if packed:
        ids = batch["input_mask"]
        mask = (ids[:, :, None] == ids[:, None, :]).long()
        out = model(input_ids=batch["input_ids"].long(),
                    token_type_ids=batch["segment_ids"].long(), attention_mask=mask,
                    position_ids=batch["positions"].long(), output_hidden_states=True)
    else:
        mask = batch["input_mask"].long()
        out = model(input_ids=batch["input_ids"].long(),
                    token_type_ids=batch["segment_ids"].long(), attention_mask=mask)
    positions = batch["masked_lm_positions"].long()
    rows = torch.arange(positions.shape[0]).unsqueeze(1).expand_as(positions)
    mlm = out.prediction_logits[rows, positions].reshape(-1, out.prediction_logits.shape[-1])
    labels = batch["masked_lm_ids"].long().reshape(-1)
    weights = batch["masked_lm_weights"].reshape(-1).to(dtype)
    mlm_loss = weighted_nll(mlm, labels, weights)
    if packed:
        first = batch["next_sentence_positions"].long()
        rows = torch.arange(first.shape[0]).unsqueeze(1).expand_as(first)
        pooled = torch.tanh(model.bert.pooler.dense(out.hidden_states[-1][rows, first]))
        nsp = model.cls.seq_relationship(pooled).reshape(-1, 2)
        nsp_loss = weighted_nll(nsp, batch["next_sentence_labels"].long().reshape(-1),
                                batch["next_sentence_weights"].reshape(-1).to(dtype))
    else:
        nsp = out.seq_relationship_logits
        nsp_loss = F.cross_entropy(nsp, batch["next_sentence_labels"].long().reshape(-1))
    loss = mlm_loss + nsp_loss
    loss.backward()
    return {"mlm_logits": mlm, "nsp_logits": nsp,
            "mlm_loss": mlm_loss.reshape(1), "nsp_loss": nsp_loss.reshape(1),
            "loss": loss.reshape(1)}


def main():
    weights_path, batch_path, out_path = sys.argv[1:4]
    vocab, hidden, layers, heads, intermediate, positions = map(int, sys.argv[4:10])
    torch.manual_seed(0)
    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate,
                        max_position_embeddings=positions, type_vocab_size=2,
                        hidden_act="gelu_new", hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, layer_norm_eps=1e-12)
    model = BertForPreTraining(config).eval()
    ours = read(weights_path)
    missing, unexpected = model.load_state_dict(to_hf(ours, layers), strict=False)
    # Only the tied decoder (weight = word embeddings, bias = cls.predictions.bias).
    assert set(missing) <= {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}, \
        missing
    assert not unexpected, unexpected
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    batch = read(batch_path)
    result = {}
    for prefix, dtype in (("", torch.float32), ("f64/", torch.float64)):
        outputs = run(model, batch, dtype)
        for name, t in outputs.items():
            result[prefix + name] = t
        for name, g in our_gradients(model, layers).items():
            result[prefix + "grad/" + name] = g
    write(out_path, result, {"parameters": str(sum(p.numel() for p in model.parameters()))})


if __name__ == "__main__":
    main()
