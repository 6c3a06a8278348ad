"""A Megatron GPT checkpoint in its distributed Zarr form, as the GPT-3
reference's is laid out, for tests/llm/decoder_checkpoint_test.cc: a seeded
transformers GPT2LMHeadModel (the same architecture: learned positions,
LayerNorm, GELU in its tanh form, biases, tied output layer) renamed to
Megatron's names, each layer's tensors stacked on a first dimension, the
query, key and value projections merged head by head (each head's query,
key and value rows together, as Megatron's forward splits them), written by
the zarr package without compression in chunks that split the stacks and
rows, plus metadata.json. Also writes a batch and transformers' logits for
it. Run with /usr/bin/python3.

usage: megatron_gpt_checkpoint.py FOLDER VOCAB HIDDEN LAYERS HEADS INTERMEDIATE SEQ POSITIONS
  FOLDER/checkpoint/<tensor>/   the arrays
  FOLDER/expected.safetensors   tokens [2, SEQ] and logits [2 * SEQ, VOCAB]
"""
import json
import os
import sys

import numpy as np
import torch
import zarr
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import write  # noqa: E402


def save(folder, name, array):
    array = np.ascontiguousarray(array.astype("<f4"))
    chunks = tuple(max(1, (d + 1) // 2) for d in array.shape)
    z = zarr.create(array.shape, dtype="<f4", store=os.path.join(folder, name), chunks=chunks,
                    compressor=None, fill_value=None, write_empty_chunks=False)
    z[:] = array


def main():
    out = sys.argv[1]
    vocab, hidden, layers, heads, intermediate, seq, positions = map(int, sys.argv[2:9])
    torch.manual_seed(11)
    config = GPT2Config(vocab_size=vocab, n_positions=positions, n_embd=hidden, n_layer=layers,
                        n_head=heads, n_inner=intermediate, activation_function="gelu_new",
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        layer_norm_epsilon=1e-5, tie_word_embeddings=True)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # biases and norms away from their initial 0 and 1
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    folder = os.path.join(out, "checkpoint")
    os.makedirs(folder)
    json.dump({"sharded_backend": "zarr"}, open(os.path.join(folder, "metadata.json"), "w"))
    save(folder, "language_model.embedding.word_embeddings.weight", sd["transformer.wte.weight"])
    save(folder, "language_model.embedding.position_embeddings.weight",
         sd["transformer.wpe.weight"])
    save(folder, "language_model.encoder.final_layernorm.weight", sd["transformer.ln_f.weight"])
    save(folder, "language_model.encoder.final_layernorm.bias", sd["transformer.ln_f.bias"])
    head_dim = hidden // heads

    def stack(fn):
        return np.stack([fn(f"transformer.h.{n}.") for n in range(layers)])

    def qkv_weight(g):
        # GPT-2's Conv1D holds [in, q|k|v out]; Megatron's [heads x (q, k, v) x head_dim, in].
        w = sd[g + "attn.c_attn.weight"].T.reshape(3, heads, head_dim, hidden)
        return w.transpose(1, 0, 2, 3).reshape(3 * hidden, hidden)

    def qkv_bias(g):
        b = sd[g + "attn.c_attn.bias"].reshape(3, heads, head_dim)
        return b.transpose(1, 0, 2).reshape(3 * hidden)

    p = "language_model.encoder.layers."
    save(folder, p + "input_layernorm.weight", stack(lambda g: sd[g + "ln_1.weight"]))
    save(folder, p + "input_layernorm.bias", stack(lambda g: sd[g + "ln_1.bias"]))
    save(folder, p + "self_attention.query_key_value.weight", stack(qkv_weight))
    save(folder, p + "self_attention.query_key_value.bias", stack(qkv_bias))
    save(folder, p + "self_attention.dense.weight", stack(lambda g: sd[g + "attn.c_proj.weight"].T))
    save(folder, p + "self_attention.dense.bias", stack(lambda g: sd[g + "attn.c_proj.bias"]))
    save(folder, p + "post_attention_layernorm.weight", stack(lambda g: sd[g + "ln_2.weight"]))
    save(folder, p + "post_attention_layernorm.bias", stack(lambda g: sd[g + "ln_2.bias"]))
    save(folder, p + "mlp.dense_h_to_4h.weight", stack(lambda g: sd[g + "mlp.c_fc.weight"].T))
    save(folder, p + "mlp.dense_h_to_4h.bias", stack(lambda g: sd[g + "mlp.c_fc.bias"]))
    save(folder, p + "mlp.dense_4h_to_h.weight", stack(lambda g: sd[g + "mlp.c_proj.weight"].T))
    save(folder, p + "mlp.dense_4h_to_h.bias", stack(lambda g: sd[g + "mlp.c_proj.bias"]))
    tokens = torch.randint(0, vocab, (2, seq))
    with torch.no_grad():
        logits = model(input_ids=tokens).logits.reshape(-1, vocab)
    write(os.path.join(out, "expected.safetensors"), {"tokens": tokens, "logits": logits})


if __name__ == "__main__":
    main()
