"""Llama 2 70B LoRA's adapters in the ecosystem's tools: one seeded run of
the demonstration with --save_adapters; peft (PeftModel.from_pretrained) puts
the saved adapters on the base checkpoint the demonstration wrote (Hugging
Face shards, loaded by transformers, each layer's q/k/v fused into the
reference's qkv_proj as tests/llm/lora_parity.py does) and computes the evaluation as the
reference's Trainer does (each validation sample's mean loss over its
counted labels, averaged over samples): it must equal the run's last
eval_accuracy. A second invocation into the same folder is refused and
changes nothing.

usage: check_lora_adapters.py RUN_CLOSED
Runs under /usr/bin/python3 (PyTorch, transformers and peft there).
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from peft import PeftModel
from transformers import LlamaForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "llm"))
from lora_parity import fuse_qkv  # noqa: E402


def last_evaluation(log):
    value = None
    with open(log) as f:
        for line in f:
            if line.startswith(":::MLLOG "):
                event = json.loads(line[len(":::MLLOG "):])
                if event["key"] == "eval_accuracy":
                    value = event["value"]
    return value


def peft_evaluation(data, base, adapters):
    model = LlamaForCausalLM.from_pretrained(base, torch_dtype=torch.float32)
    for layer in model.model.layers:
        fuse_qkv(layer.self_attn)
    model = PeftModel.from_pretrained(model, adapters).eval()
    ids = np.load(os.path.join(data, "validation_input_ids.npy"))
    labels = np.load(os.path.join(data, "validation_labels.npy"))
    offsets = np.load(os.path.join(data, "validation_offsets.npy"))
    losses = []
    with torch.no_grad():
        for i in range(len(offsets) - 1):
            a, b = offsets[i], offsets[i + 1]
            out = model(input_ids=torch.tensor(ids[None, a:b].astype(np.int64)),
                        labels=torch.tensor(labels[None, a:b].astype(np.int64)))
            losses.append(out.loss.item())
    return float(np.mean(losses))


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        adapters = os.path.join(tmp, "adapters")
        cmd = [tool, "--bench", "llama2_70b_lora", "--runs", "1", "--seed", "21",
               "--cache_dir", os.path.join(tmp, "cache"),
               "--out", os.path.join(tmp, "out"), "--save_adapters", adapters]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        if r.returncode != 0:
            print(f"FAIL: run_closed exit {r.returncode}: {r.stderr[-2000:]}")
            return 1
        logs = glob.glob(os.path.join(tmp, "out", "mlperf-suite", "results", "*",
                                      "llama2_70b_lora", "result_0.txt"))
        data = glob.glob(os.path.join(tmp, "cache", "generated-govreport-*", ""))
        saved = os.path.join(adapters, "run_0")
        if len(logs) != 1 or len(data) != 1 or not os.path.isdir(saved):
            print(f"FAIL: logs {logs}, data {data}, adapters there: {os.path.isdir(saved)}")
            return 1
        ours = last_evaluation(logs[0])
        theirs = peft_evaluation(data[0], os.path.join(data[0], "base"), saved)
        print(f"last eval_accuracy {ours}, peft on the saved adapters {theirs}")
        failures = []
        if abs(ours - theirs) > 1e-4 * abs(ours):
            failures.append(f"peft's evaluation {theirs} differs from the run's {ours}")
        before = os.path.getmtime(os.path.join(saved, "adapter_model.safetensors"))
        again = subprocess.run(cmd[:-4] + ["--out", os.path.join(tmp, "again"),
                                           "--save_adapters", adapters],
                               capture_output=True, text=True, timeout=240)
        if again.returncode != 2 or "--save_adapters replaces nothing" not in again.stderr:
            failures.append(f"a second invocation: exit {again.returncode}: {again.stderr[-500:]}")
        if os.path.getmtime(os.path.join(saved, "adapter_model.safetensors")) != before:
            failures.append("the second invocation rewrote the adapters")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
