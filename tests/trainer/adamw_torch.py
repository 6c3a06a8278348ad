"""torch.optim.AdamW as a peer for tests/trainer/trainer_test.cc: from the
initial weights and each step's gradients the C++ trainer recorded, the
weights after the last step, in fp64, with the rate of each step given and
no weight decay for the parameters the metadata names.
Run with /usr/bin/python3 (Debian's python3-torch).

usage: adamw_torch.py IN OUT
IN holds w0/<name> and g<k>/<name> for steps k = 0.., and metadata: beta1,
beta2, epsilon, weight_decay, steps, lr<k>, no_decay (names, comma separated)
and, optionally, max_grad_norm (torch.nn.utils.clip_grad_norm_ over every
parameter before each step).
"""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read, write  # noqa: E402


def metadata(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n])["__metadata__"]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    tensors, meta = read(src), metadata(src)
    names = sorted(k[3:] for k in tensors if k.startswith("w0/"))
    params = {n: tensors["w0/" + n].double().requires_grad_() for n in names}
    no_decay = set(meta["no_decay"].split(","))
    groups = [{"params": [params[n] for n in names if n not in no_decay],
               "weight_decay": float(meta["weight_decay"])},
              {"params": [params[n] for n in names if n in no_decay], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=1.0, betas=(float(meta["beta1"]), float(meta["beta2"])),
                            eps=float(meta["epsilon"]))
    for k in range(int(meta["steps"])):
        for group in opt.param_groups:
            group["lr"] = float(meta[f"lr{k}"])
        for n in names:
            params[n].grad = tensors[f"g{k}/{n}"].double()
        if "max_grad_norm" in meta:
            torch.nn.utils.clip_grad_norm_([params[n] for n in names],
                                           float(meta["max_grad_norm"]))
        opt.step()
    write(dst, {"w/" + n: params[n] for n in names})


if __name__ == "__main__":
    main()
