"""Helper of retinanet_backbone_test. `make PTH`: a torchvision
resnext50_32x4d state dict (random weights, random batch-norm statistics)
saved with torch.save, as the reference's download is. `compare PTH
SAFETENSORS`: every tensor of the state dict but fc.* and
num_batches_tracked is in the file, equal (exit 1 naming the first that is
not, or an extra one)."""
import sys

import torch
from safetensors.torch import load_file
from torchvision.models import resnext50_32x4d


def main():
    if sys.argv[1] == "make":
        torch.manual_seed(3)
        model = resnext50_32x4d()
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.2, 0.2)
        torch.save(model.state_dict(), sys.argv[2])
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
