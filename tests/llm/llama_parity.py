"""Hugging Face transformers oracle for tests/llm/decoder_parity_test.cc.

Builds transformers' LlamaForCausalLM at the size given (eager attention),
loads the C++ model's safetensors weights by name (both use transformers'
names), puts Llama 3's scaled rotary frequencies into every layer's rotary
embedding (transformers 4.40 predates the "llama3" rope_scaling type; the
rule is transcribed here from its published description), runs one batch
and writes the logits, the mean next-token cross-entropy and every
parameter gradient, in fp32 and in fp64 (prefix f64/), plus the frequencies
(inv_freq) for the C++ test to compare with its own.
Run with /usr/bin/python3 (Debian's python3-torch, transformers from pip).

usage: llama_parity.py WEIGHTS BATCH OUTPUT VOCAB HIDDEN LAYERS HEADS KV_HEADS
       INTERMEDIATE SEQ THETA FACTOR LOW HIGH ORIGINAL TIED
"""
import math
import os
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read, write  # noqa: E402
from oracle_pass import forward_backward_record  # noqa: E402


def llama3_inv_freq(head_dim, theta, factor, low, high, original):
    inv = [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]
    if factor <= 0:
        return inv
    out = []
    for f in inv:
        wavelength = 2 * math.pi / f
        if wavelength < original / high:
            out.append(f)
        elif wavelength > original / low:
            out.append(f / factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            out.append((1 - smooth) * f / factor + smooth * f)
    return out


def main():
    weights_path, batch_path, out_path = sys.argv[1:4]
    vocab, hidden, layers, heads, kv_heads, intermediate, seq = map(int, sys.argv[4:11])
    theta, factor, low, high = map(float, sys.argv[11:15])
    original, tied = int(sys.argv[15]), sys.argv[16] == "1"
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads,
                         intermediate_size=intermediate, max_position_embeddings=seq,
                         rms_norm_eps=1e-5, rope_theta=theta, tie_word_embeddings=tied,
                         attention_bias=False, attn_implementation="eager")
    model = LlamaForCausalLM(config).eval()
    ours = read(weights_path)
    missing, unexpected = model.load_state_dict(ours, strict=False)
    assert set(missing) <= ({"lm_head.weight"} if tied else set()), missing
    assert not unexpected, unexpected
    inv = llama3_inv_freq(hidden // heads, theta, factor, low, high, original)
    batch = read(batch_path)
    tokens, labels = batch["tokens"].long(), batch["labels"].long()

    def scaled_rotary(m):
        for layer in m.model.layers:
            layer.self_attn.rotary_emb.inv_freq = torch.tensor(inv, dtype=torch.float32)

    result = forward_backward_record(
        model, tokens, labels, vocab,
        lambda m: {name: p.grad.clone() for name, p in m.named_parameters()}, scaled_rotary)
    result["inv_freq"] = torch.tensor(inv, dtype=torch.float64)
    write(out_path, result)


if __name__ == "__main__":
    main()
