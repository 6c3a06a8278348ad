"""Oracles for tests/unet3d/kits19_io_test.cc, run with /usr/bin/python3.

usage: kits19_io_oracle.py write DIR   nibabel, numpy and torch write the inputs
                                       and the answers the C++ must reproduce
       kits19_io_oracle.py read DIR    nibabel and numpy read what the C++ wrote

Raw arrays are written with tofile() (C order, native byte order); float
answers as float32. The preparation follows mlcommons/training
retired_benchmarks/unet3d/pytorch/preprocess_dataset.py step by step, with the
minimum size as a parameter (the reference fixes it at 128).
"""
import os
import sys

import nibabel
import numpy as np
import torch
from torch.nn.functional import interpolate

TARGET_SPACING = [1.6, 1.2, 1.2]
MIN_SIZE = 16  # small, so that padding happens on small cases

# name, dtype, shape (a 4th axis of 1 is allowed), (slope, inter) or None,
# byte order, spacing
NIFTI_CASES = [
    ("scaled_i16.nii.gz", np.int16, (7, 5, 3), (2.0, -1024.0), "<", (0.8, 0.7, 2.5)),
    ("odd_scale_i16.nii", np.int16, (4, 3, 5), (0.3, -1.7), "<", (1.1, 0.9, 3.0)),
    ("labels_u8.nii", np.uint8, (4, 6, 5), None, "<", (0.8, 0.7, 2.5)),
    ("floats_f32.nii.gz", np.float32, (3, 4, 6), None, "<", (0.8, 0.7, 2.5)),
    ("big_endian_i16.nii.gz", np.int16, (5, 3, 4), (0.5, 10.0), ">", (2.0, 0.78125, 0.78125)),
    ("doubles_f64_4d.nii", np.float64, (3, 2, 5, 1), None, "<", (1.0, 1.0, 1.0)),
    ("signed_i8.nii", np.int8, (2, 3, 4), None, "<", (1.0, 2.0, 3.0)),
    ("wide_u16.nii", np.uint16, (2, 3, 4), None, ">", (1.0, 2.0, 3.0)),
    ("wide_i32.nii.gz", np.int32, (2, 3, 4), (1.5, 0.0), "<", (1.0, 2.0, 3.0)),
    ("wide_u32.nii", np.uint32, (2, 3, 4), None, "<", (1.0, 2.0, 3.0)),
]

# (input shape, output shape): odd sizes, up and down, size 1, exact doubling.
RESAMPLE_CASES = [
    ((6, 9, 5), (11, 4, 7)),
    ((13, 7, 10), (5, 16, 10)),
    ((1, 5, 3), (3, 1, 6)),
    ((4, 3, 7), (8, 6, 14)),
    ((23, 31, 17), (40, 12, 29)),
]

# case id, shape, spacing: resampled and padded unevenly; at the target
# spacing as fp32 stores it (resampled to the same shape); down and up.
PREPARE_CASES = [
    (3, (9, 7, 12), (2.0, 1.5, 1.1)),
    (5, (20, 17, 18), (1.6, 1.2, 1.2)),
    (7, (30, 9, 14), (0.9, 2.5, 0.7)),
]


def save_nifti(path, data, spacing, dtype, scaling=None, order="<"):
    header = nibabel.Nifti1Header(endianness=order)
    img = nibabel.Nifti1Image(data.astype(dtype), np.diag(list(spacing) + [1.0]), header=header)
    if scaling is not None:
        img.header.set_slope_inter(*scaling)
    nibabel.save(img, path)


def write_nifti_inputs(d, rng):
    for name, dtype, shape, scaling, order, spacing in NIFTI_CASES:
        info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
        if info is None:
            data = rng.normal(0, 300, size=shape)
        else:
            data = rng.integers(max(info.min, -3000), min(info.max, 3000), size=shape, endpoint=True)
        path = os.path.join(d, name)
        save_nifti(path, data, spacing, dtype, scaling, order)
        img = nibabel.load(path)
        img.get_fdata().astype(np.float32).tofile(path + ".expected")
        np.asarray(img.header["pixdim"][1:4], dtype=np.float64).tofile(path + ".spacing")


def write_npy_inputs(d):
    f4 = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    np.save(os.path.join(d, "numpy_f4.npy"), f4)
    np.save(os.path.join(d, "numpy_u1.npy"), (np.arange(15, dtype=np.uint8) % 3).reshape(1, 5, 3))
    with open(os.path.join(d, "numpy_f4_v2.npy"), "wb") as f:
        np.lib.format.write_array(f, f4, version=(2, 0))
    np.save(os.path.join(d, "numpy_i2.npy"), np.zeros(3, dtype=np.int16))
    np.save(os.path.join(d, "numpy_big_f4.npy"), f4.astype(">f4"))
    np.save(os.path.join(d, "numpy_fortran.npy"), np.asfortranarray(f4))


def write_resample_inputs(d, rng):
    with open(os.path.join(d, "resample.txt"), "w") as manifest:
        for k, (shape, size) in enumerate(RESAMPLE_CASES):
            image = rng.random(shape, dtype=np.float32)
            label = rng.integers(0, 3, size=shape).astype(np.uint8)
            base = os.path.join(d, f"resample_{k}")
            image.tofile(base + "_in.f32")
            label.tofile(base + "_in.u8")
            # Fortran order, as nibabel gives the reference its arrays (torch
            # takes another kernel for C-ordered input).
            trilinear = interpolate(torch.from_numpy(np.asfortranarray(image))[None, None],
                                    size=size, mode="trilinear", align_corners=True)
            trilinear[0, 0].numpy().tofile(base + "_trilinear.f32")
            nearest = interpolate(torch.from_numpy(label)[None, None], size=size, mode="nearest")
            nearest[0, 0].numpy().tofile(base + "_nearest.u8")
            manifest.write(" ".join(str(v) for v in (k, *shape, *size)) + "\n")


def reference_prepare(case_dir, out_dir, case):
    """The reference's load_pair, resample3d, normalize_intensity,
    pad_to_min_shape and save, in that order."""
    image = nibabel.load(os.path.join(case_dir, "imaging.nii.gz"))
    label = nibabel.load(os.path.join(case_dir, "segmentation.nii.gz"))
    spacing = image.header["pixdim"][1:4].tolist()
    image = np.expand_dims(image.get_fdata().astype(np.float32), 0)
    label = np.expand_dims(label.get_fdata().astype(np.uint8), 0)
    if spacing != TARGET_SPACING:
        size = (np.array(spacing) / np.array(TARGET_SPACING) * np.array(image.shape[1:]))
        size = size.astype(int).tolist()
        image = interpolate(torch.from_numpy(np.expand_dims(image, 0)), size=size,
                            mode="trilinear", align_corners=True)
        label = interpolate(torch.from_numpy(np.expand_dims(label, 0)), size=size,
                            mode="nearest")
        image = np.squeeze(image.numpy(), 0)
        label = np.squeeze(label.numpy(), 0)
    image = (np.clip(image.copy(), -79.0, 304.0) - 101.0) / 76.9
    missing = [max(0, MIN_SIZE - s) for s in image.shape[1:]]
    pads = [(0, 0)] + [(m // 2, m - m // 2) for m in missing]
    image = np.pad(image, pads, mode="edge")
    label = np.pad(label, pads, mode="edge")
    np.save(os.path.join(out_dir, f"{case}_x.npy"), image.astype(np.float32))
    np.save(os.path.join(out_dir, f"{case}_y.npy"), label.astype(np.uint8))


def write_prepare_inputs(d, rng):
    raw, theirs = os.path.join(d, "raw"), os.path.join(d, "theirs")
    os.makedirs(theirs, exist_ok=True)
    for case_id, shape, spacing in PREPARE_CASES:
        case = f"case_{case_id:05d}"
        case_dir = os.path.join(raw, case)
        os.makedirs(case_dir, exist_ok=True)
        # Hounsfield units well past both clip bounds; labels in blocks.
        hu = rng.integers(-1000, 1500, size=shape)
        label = (np.indices(shape).sum(axis=0) // 3) % 3
        save_nifti(os.path.join(case_dir, "imaging.nii.gz"), hu, spacing, np.int16)
        save_nifti(os.path.join(case_dir, "segmentation.nii.gz"), label, spacing, np.uint8)
        reference_prepare(case_dir, theirs, case)


def write(d):
    rng = np.random.default_rng(2019)
    write_nifti_inputs(d, rng)
    write_npy_inputs(d)
    write_resample_inputs(d, rng)
    write_prepare_inputs(d, rng)


def read(d):
    """Reads ours_*.nii(.gz) and ours_*.npy; dumps what nibabel sees and
    checks the headers and the .npy contents itself."""
    for name in ("ours_i16.nii.gz", "ours_u8.nii", "ours_f32.nii.gz"):
        img = nibabel.load(os.path.join(d, name))
        img.get_fdata().astype(np.float32).tofile(os.path.join(d, name + ".nibabel"))
        spacing = [float(s) for s in img.header["pixdim"][1:4]]
        expected = np.diag(spacing + [1.0])
        assert img.shape == (3, 2, 5), (name, img.shape)
        assert np.allclose(img.header.get_sform(), expected), (name, img.header.get_sform())
        assert np.allclose(img.header.get_qform(), expected), (name, img.header.get_qform())
        assert int(img.header["sform_code"]) == 1 and int(img.header["qform_code"]) == 1, name
        assert np.allclose(spacing, [1.6, 1.2, 0.9]), (name, spacing)
    f4 = np.load(os.path.join(d, "ours_f4.npy"))
    u1 = np.load(os.path.join(d, "ours_u1.npy"))
    assert f4.dtype == np.float32 and f4.shape == (1, 3, 2, 5), (f4.dtype, f4.shape)
    assert u1.dtype == np.uint8 and u1.shape == (1, 3, 2, 5), (u1.dtype, u1.shape)
    assert np.array_equal(f4.ravel(), np.arange(30, dtype=np.float32) / 3), f4
    assert np.array_equal(u1.ravel(), np.arange(30) % 3), u1


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "read"):
        sys.exit(__doc__)
    (write if sys.argv[1] == "write" else read)(sys.argv[2])
