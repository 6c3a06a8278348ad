"""PyTorch transcription of the BERT reference's optimizer for
tests/bert/bert_trainer_test.cc: optimization.py's learning rate (warm-up
from start_warmup_step, then polynomial decay to 0, the step counted from 0
as TensorFlow's global_step), clip_by_global_norm over all gradients, and
lamb_optimizer_v1.py's bias-corrected LAMB with weight decay and the trust
ratio skipped for variables whose name contains "LayerNorm", "layer_norm" or
"bias". In fp64, from the initial weights and each step's gradients the C++
trainer recorded; writes the weights after the last step.
Run with /usr/bin/python3 (Debian's python3-torch).

usage: lamb_torch.py IN OUT
IN holds w0/<name>, g<k>/<name> for steps k = 0.., and metadata with the
hyperparameters.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read, write  # noqa: E402


def metadata(path):
    import json
    import struct
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n])["__metadata__"]


def learning_rate(h, step):
    warm = step - h["start_warmup_step"]
    if h["warmup_steps"] > 0 and warm < h["warmup_steps"]:
        return h["lr"] * warm / h["warmup_steps"]
    t = min(step, h["train_steps"])
    return h["lr"] * (1.0 - t / h["train_steps"]) ** 1.0


def excluded(name):
    return any(k in name for k in ("LayerNorm", "layer_norm", "bias"))


def main():
    tensors = read(sys.argv[1])
    h = {k: float(v) for k, v in metadata(sys.argv[1]).items()}
    names = [k[3:] for k in tensors if k.startswith("w0/")]
    w = {n: tensors["w0/" + n].double() for n in names}
    m = {n: torch.zeros_like(w[n]) for n in names}
    v = {n: torch.zeros_like(w[n]) for n in names}
    steps = int(h["steps"])
    b1, b2, eps, wd = h["beta1"], h["beta2"], h["epsilon"], h["weight_decay"]
    for step in range(steps):
        g = {n: tensors[f"g{step}/" + n].double() for n in names}
        norm = torch.sqrt(sum((x * x).sum() for x in g.values()))
        clip = h["max_grad_norm"] / max(norm.item(), h["max_grad_norm"])
        lr = learning_rate(h, step)
        t = step + 1
        for n in names:
            gi = g[n] * clip
            m[n] = b1 * m[n] + (1 - b1) * gi
            v[n] = b2 * v[n] + (1 - b2) * gi * gi
            u = (m[n] / (1 - b1 ** t)) / (torch.sqrt(v[n] / (1 - b2 ** t)) + eps)
            ratio = 1.0
            if not excluded(n):
                u = u + wd * w[n]
                wn, un = w[n].norm().item(), u.norm().item()
                ratio = wn / un if wn > 0 and un > 0 else 1.0
            w[n] = w[n] - lr * ratio * u
    write(sys.argv[2], {"w/" + n: w[n] for n in names})


if __name__ == "__main__":
    main()
