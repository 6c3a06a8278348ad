"""ml_dtypes oracle for tests/core/fp8_test.cc: fp32 -> float8_e4m3fn and
float8_e5m2 as ml_dtypes converts (numpy astype), and every 8-bit pattern of
both widened back to fp32. Run with /usr/bin/python3 (ml_dtypes from
scripts/install_deps.sh --test).

usage: fp8_oracle.py FLOATS.f32 OUT.bin
  FLOATS.f32: little-endian fp32 values
  OUT.bin:    their E4M3 bits, their E5M2 bits (a byte each), then the fp32
              bits of E4M3 pattern 0..255 and of E5M2 pattern 0..255
"""
import sys

import ml_dtypes
import numpy as np


def main():
    floats = np.fromfile(sys.argv[1], dtype="<f4")
    patterns = np.arange(256, dtype=np.uint8)
    with np.errstate(all="ignore"), open(sys.argv[2], "wb") as out:
        for fmt in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
            out.write(floats.astype(fmt).view(np.uint8).tobytes())
        for fmt in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
            out.write(patterns.view(fmt).astype("<f4").tobytes())


if __name__ == "__main__":
    main()
