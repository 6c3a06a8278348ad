"""Hugging Face transformers oracle for the GPT configuration of
tests/llm/decoder_parity_test.cc: transformers' GPT2LMHeadModel (learned
positions, LayerNorm, GELU in its tanh form, biases, tied output layer) with
the C++ model's weights, renamed and laid out as GPT-2 keeps them (its
Conv1D layers store [in, out]; queries, keys and values in one c_attn). Runs
one batch and writes the logits, the mean next-token cross-entropy and
every parameter gradient under the C++ names, in fp32 and in fp64 (prefix
f64/). Run with /usr/bin/python3 (Debian's python3-torch, transformers from
pip).

usage: gpt_parity.py WEIGHTS BATCH OUTPUT VOCAB HIDDEN LAYERS HEADS INTERMEDIATE SEQ POSITIONS
"""
import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read, write  # noqa: E402
from oracle_pass import forward_backward_record  # noqa: E402


def theirs_from_ours(ours, layers):
    t = {"transformer.wte.weight": ours["model.embed_tokens.weight"],
         "transformer.wpe.weight": ours["model.embed_positions.weight"],
         "transformer.ln_f.weight": ours["model.norm.weight"],
         "transformer.ln_f.bias": ours["model.norm.bias"],
         "lm_head.weight": ours["model.embed_tokens.weight"]}
    for n in range(layers):
        o, g = f"model.layers.{n}.", f"transformer.h.{n}."
        for a, b in (("input_layernorm", "ln_1"), ("post_attention_layernorm", "ln_2")):
            for p in ("weight", "bias"):
                t[g + b + "." + p] = ours[o + a + "." + p]
        qkv = [ours[o + f"self_attn.{x}_proj.weight"] for x in "qkv"]
        t[g + "attn.c_attn.weight"] = torch.cat(qkv, 0).t().contiguous()
        t[g + "attn.c_attn.bias"] = torch.cat([ours[o + f"self_attn.{x}_proj.bias"] for x in "qkv"])
        for a, b in (("self_attn.o_proj", "attn.c_proj"), ("mlp.fc_in", "mlp.c_fc"),
                     ("mlp.fc_out", "mlp.c_proj")):
            t[g + b + ".weight"] = ours[o + a + ".weight"].t().contiguous()
            t[g + b + ".bias"] = ours[o + a + ".bias"]
    return t


def grads_as_ours(model, layers, hidden):
    named = dict(model.named_parameters())
    grad = {k: p.grad for k, p in named.items()}
    out = {"model.embed_tokens.weight": grad["transformer.wte.weight"],
           "model.embed_positions.weight": grad["transformer.wpe.weight"],
           "model.norm.weight": grad["transformer.ln_f.weight"],
           "model.norm.bias": grad["transformer.ln_f.bias"]}
    for n in range(layers):
        o, g = f"model.layers.{n}.", f"transformer.h.{n}."
        for a, b in (("input_layernorm", "ln_1"), ("post_attention_layernorm", "ln_2")):
            for p in ("weight", "bias"):
                out[o + a + "." + p] = grad[g + b + "." + p]
        w = grad[g + "attn.c_attn.weight"].t()
        b = grad[g + "attn.c_attn.bias"]
        for i, x in enumerate("qkv"):
            out[o + f"self_attn.{x}_proj.weight"] = w[i * hidden:(i + 1) * hidden]
            out[o + f"self_attn.{x}_proj.bias"] = b[i * hidden:(i + 1) * hidden]
        for a, c in (("self_attn.o_proj", "attn.c_proj"), ("mlp.fc_in", "mlp.c_fc"),
                     ("mlp.fc_out", "mlp.c_proj")):
            out[o + a + ".weight"] = grad[g + c + ".weight"].t()
            out[o + a + ".bias"] = grad[g + c + ".bias"]
    return {k: v.clone().contiguous() for k, v in out.items()}


def main():
    weights_path, batch_path, out_path = sys.argv[1:4]
    vocab, hidden, layers, heads, intermediate, seq, positions = map(int, sys.argv[4:11])
    config = GPT2Config(vocab_size=vocab, n_positions=positions, n_embd=hidden, n_layer=layers,
                        n_head=heads, n_inner=intermediate, activation_function="gelu_new",
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        layer_norm_epsilon=1e-5, tie_word_embeddings=True)
    model = GPT2LMHeadModel(config).eval()
    model.load_state_dict(theirs_from_ours(read(weights_path), layers), strict=True)
    batch = read(batch_path)
    tokens, labels = batch["tokens"].long(), batch["labels"].long()
    write(out_path, forward_backward_record(model, tokens, labels, vocab,
                                            lambda m: grads_as_ours(m, layers, hidden)))


if __name__ == "__main__":
    main()
