"""Helper of retinanet_backbone_test. `make PTH [legacy]`: a torchvision
resnext50_32x4d state dict (random weights, random batch-norm statistics)
saved with torch.save (zip, or the legacy format torchvision's published
weights use), as the reference's download is. `dtypes PTH [legacy]`: a dict
of fp32, fp16, bf16, fp64 and int64 tensors, one of them a contiguous slice
at an offset into a shared storage, and one not contiguous. `compare PTH
SAFETENSORS`: every tensor of the state dict but fc.* and
num_batches_tracked is in the file, equal (exit 1 naming the first that is
not, or an extra one)."""
import sys

import torch
from safetensors.torch import load_file
from torchvision.models import resnext50_32x4d


def main():
    legacy = len(sys.argv) > 3 and sys.argv[3] == "legacy"
    if sys.argv[1] == "dtypes":
        base = torch.arange(24, dtype=torch.float32) / 7
        d = {"f32": base.reshape(2, 3, 4), "f16": (base[:6] - 1).half(), "bf16": base[:5].bfloat16(),
             "f64": base[:4].double() * 3, "i64": torch.arange(5), "slice": base[10:16],
             "strided": base.reshape(4, 6).t()}
        torch.save(d, sys.argv[2], _use_new_zipfile_serialization=not legacy)
        return 0
    if sys.argv[1] == "make":
        torch.manual_seed(3)
        model = resnext50_32x4d()
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.2, 0.2)
        torch.save(model.state_dict(), sys.argv[2], _use_new_zipfile_serialization=not legacy)
        return 0
    state = torch.load(sys.argv[2], map_location="cpu")
    saved = load_file(sys.argv[3])
    want = {k: v for k, v in state.items() if not k.startswith("fc.") and "num_batches" not in k}
    for name, t in want.items():
        if name not in saved or not torch.equal(saved[name], t.float()):
            print(f"{name}: missing or different", file=sys.stderr)
            return 1
    extra = set(saved) - set(want)
    if extra:
        print(f"extra tensors: {sorted(extra)[:3]}", file=sys.stderr)
        return 1
    print(f"{len(want)} tensors equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
