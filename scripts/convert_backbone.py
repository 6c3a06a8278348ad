#!/usr/bin/env python3
"""Converts the ImageNet-trained backbone the RetinaNet reference starts
from, once, into the safetensors file `run_closed --bench retinanet
--backbone FILE` reads (the C++ build reads no PyTorch pickles).

  scripts/convert_backbone.py CHECKPOINT.pth OUT.safetensors

CHECKPOINT.pth: torchvision's resnext50_32x4d state dict as the reference
downloads it (resnext50_32x4d-7cdf4587.pth), or any ResNet state dict under
the same names. The classifier (fc.*) and the batch norms'
num_batches_tracked are dropped; every other tensor is kept under its name
in fp32.

Needs PyTorch and safetensors (both installed with transformers). Never
replaces a file. Exit 0: converted; 1: not a ResNet state dict; 2: usage, a
missing file or an existing output.
"""
import os
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[4].strip(), file=sys.stderr)
        return 2
    source, out = sys.argv[1], sys.argv[2]
    if not os.path.isfile(source):
        print(f"convert_backbone: {source}: no such file", file=sys.stderr)
        return 2
    if os.path.lexists(out):
        print(f"convert_backbone: {out}: exists already; nothing is replaced", file=sys.stderr)
        return 2
    try:
        import torch
        from safetensors.torch import save_file
    except ImportError as e:
        print(f"convert_backbone: {e.name} is missing (pip install {e.name})", file=sys.stderr)
        return 2
    state = torch.load(source, map_location="cpu")
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or "conv1.weight" not in state or "layer4.0.conv1.weight" not in state:
        print(f"convert_backbone: {source}: not a ResNet state dict (no conv1.weight, layer4.*)",
              file=sys.stderr)
        return 1
    kept = {name: t.detach().float().contiguous() for name, t in state.items()
            if not name.startswith("fc.") and not name.endswith("num_batches_tracked")}
    save_file(kept, out)
    print(f"convert_backbone: {len(kept)} tensors into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
