"""The PyTorch peer of bench/llm/llama_train_bench.cc: transformers'
LlamaForCausalLM at the same size (eager attention, no rope scaling: the
frequencies only change values, not work), in training mode, on the tokens
and labels the C++ side wrote (a safetensors file). One step is the forward,
the mean next-token cross-entropy and the backward; the optimizer is not
timed, as on our side. With LORA_RANK > 0, peft's LoRA of that rank (alpha
twice the rank, no dropout) on q_proj, k_proj, v_proj and o_proj, the base
frozen in fp32. Warm-up steps, then one line on stdout,
"<median> <min> <max>" seconds per step (per-step times go to stderr).
Run with /usr/bin/python3 (Debian's PyTorch, transformers and peft from pip).

usage: llama_torch_bench.py BATCH_FILE THREADS WARMUP STEPS VOCAB HIDDEN LAYERS HEADS
                            KV_HEADS INTERMEDIATE SEQ [LORA_RANK]
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "tools"))
from safetensors_io import read  # noqa: E402


def main():
    batch_path = sys.argv[1]
    threads, warmup, steps, vocab, hidden, layers, heads, kv_heads, intermediate, seq = (
        int(a) for a in sys.argv[2:12])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads,
                         intermediate_size=intermediate, max_position_embeddings=seq,
                         rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False,
                         attn_implementation="eager")
    model = LlamaForCausalLM(config).train()
    lora_rank = int(sys.argv[12]) if len(sys.argv) > 12 else 0
    if lora_rank > 0:
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(
            r=lora_rank, lora_alpha=2 * lora_rank, lora_dropout=0.0, bias="none",
            task_type="CAUSAL_LM", target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    batch = read(batch_path)
    tokens, labels = batch["tokens"].long(), batch["labels"].long()
    times = []
    for i in range(warmup + steps):
        start = time.perf_counter()
        model.zero_grad(set_to_none=True)
        logits = model(input_ids=tokens).logits
        loss = F.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1))
        loss.backward()
        seconds = time.perf_counter() - start
        if i >= warmup:
            times.append(seconds)
        kind = "warm-up" if i < warmup else "step"
        print(f"  torch {kind} {i}: {seconds:.3f} s  loss {loss.item():.5f}", file=sys.stderr,
              flush=True)
    print(statistics.median(times), min(times), max(times), flush=True)


if __name__ == "__main__":
    main()
