"""Writes a transformers Llama checkpoint for tests/llm/decoder_checkpoint_test.cc
the way save_pretrained leaves one: bf16 weights in several safetensors
shards with model.safetensors.index.json. Also writes, as logits.safetensors
in the same folder, the tokens and the fp32 logits of that checkpoint's
weights (widened from bf16) on them. Run with /usr/bin/python3.

usage: llama_checkpoint.py FOLDER VOCAB HIDDEN LAYERS HEADS KV_HEADS INTERMEDIATE SEQ
"""
import os
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import write  # noqa: E402


def main():
    folder = sys.argv[1]
    vocab, hidden, layers, heads, kv_heads, intermediate, seq = map(int, sys.argv[2:9])
    torch.manual_seed(3)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads,
                         intermediate_size=intermediate, max_position_embeddings=seq,
                         rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False,
                         attn_implementation="eager")
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.05)
    model = model.to(torch.bfloat16)
    model.save_pretrained(folder, max_shard_size="10KB", safe_serialization=True)
    tokens = torch.randint(0, vocab, (2, seq), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        logits = model.float()(input_ids=tokens).logits.reshape(-1, vocab)
    write(os.path.join(folder, "logits.safetensors"),
          {"tokens": tokens.to(torch.int32).float(), "logits": logits})


if __name__ == "__main__":
    main()
