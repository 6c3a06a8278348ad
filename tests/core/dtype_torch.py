"""PyTorch oracle for tests/core/dtype_torch_test.cc: fp32 -> bf16 and fp16
as PyTorch converts (torch.Tensor.to), and every 16-bit pattern widened back
to fp32. Run with /usr/bin/python3 (Debian's python3-torch).

usage: dtype_torch.py FLOATS.f32 OUT.bin
  FLOATS.f32: little-endian fp32 values
  OUT.bin:    their bf16 bits, their fp16 bits (uint16 each), then the fp32
              bits of bf16 pattern 0..65535 and of fp16 pattern 0..65535
"""
import sys

import numpy as np
import torch


def main():
    floats = torch.from_numpy(np.fromfile(sys.argv[1], dtype="<f4").copy())
    patterns = torch.arange(65536, dtype=torch.int32).to(torch.int16)
    parts = [
        floats.to(torch.bfloat16).view(torch.int16),
        floats.to(torch.float16).view(torch.int16),
        patterns.view(torch.bfloat16).to(torch.float32).view(torch.int32),
        patterns.view(torch.float16).to(torch.float32).view(torch.int32),
    ]
    with open(sys.argv[2], "wb") as out:
        for p in parts:
            out.write(p.numpy().astype(p.numpy().dtype.newbyteorder("<")).tobytes())


if __name__ == "__main__":
    main()
