"""Zarr arrays for tests/core/zarr_test.cc, written by the zarr package the
way Megatron's distributed checkpoints write them (no compressor, C order),
plus the expected values in fp32 as a safetensors file. Run with
/usr/bin/python3 (zarr 2.18 from pip, torch from Debian).

usage: zarr_arrays.py FOLDER
  FOLDER/f32       float32 [5, 7, 6], chunks [2, 3, 4] (uneven edges)
  FOLDER/f16       float16 [9, 4], chunks [4, 4]
  FOLDER/bf16      bfloat16 [3, 8], chunks [3, 8], dtype named "bfloat16" as
                   Megatron names it
  FOLDER/filled    float32 [6, 4], chunks [2, 4], fill value 1.5, the middle
                   chunk never written
  FOLDER/nested    float32 [4, 4], chunks [2, 2], "/" as the key separator
  FOLDER/expected.safetensors  every array's values in fp32
"""
import os
import sys

import numpy as np
import torch
import zarr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import write  # noqa: E402


def create(path, data, chunks, fill=None, **kw):
    z = zarr.create(data.shape, dtype=data.dtype, store=path, chunks=chunks, compressor=None,
                    fill_value=fill, write_empty_chunks=False, **kw)
    return z


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(7)
    expected = {}
    f32 = rng.standard_normal((5, 7, 6)).astype("<f4")
    create(os.path.join(out, "f32"), f32, (2, 3, 4))[:] = f32
    expected["f32"] = f32
    f16 = rng.standard_normal((9, 4)).astype("<f2")
    create(os.path.join(out, "f16"), f16, (4, 4))[:] = f16
    expected["f16"] = f16.astype("<f4")
    # bfloat16: the top half of each float32, stored as 2-byte items, the
    # dtype then renamed as Megatron's zarr strategy does.
    wide = rng.standard_normal((3, 8)).astype("<f4")
    bits = (wide.view("<u4") >> 16).astype("<u2")
    path = os.path.join(out, "bf16")
    create(path, bits, (3, 8))[:] = bits
    meta = open(os.path.join(path, ".zarray")).read().replace('"<u2"', '"bfloat16"')
    open(os.path.join(path, ".zarray"), "w").write(meta)
    expected["bf16"] = (bits.astype("<u4") << 16).view("<f4")
    filled = rng.standard_normal((6, 4)).astype("<f4")
    filled[2:4] = 1.5  # all fill: never written
    create(os.path.join(out, "filled"), filled, (2, 4), fill=1.5)[:] = filled
    assert not os.path.exists(os.path.join(out, "filled", "1.0"))
    expected["filled"] = filled
    nested = rng.standard_normal((4, 4)).astype("<f4")
    create(os.path.join(out, "nested"), nested, (2, 2), dimension_separator="/")[:] = nested
    expected["nested"] = nested
    write(os.path.join(out, "expected.safetensors"),
          {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in expected.items()})


if __name__ == "__main__":
    main()
