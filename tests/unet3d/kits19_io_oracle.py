"""Oracles for tests/unet3d/kits19_io_test.cc (run with /usr/bin/python3):
nibabel for NIfTI, numpy for .npy, torch.nn.functional.interpolate for the
resampling, and the reference's KiTS19 preprocessing written from its
behaviour (load, resample when the spacing differs, clip, normalise,
edge-pad centred).

usage: kits19_io_oracle.py write DIR       nibabel/numpy write the inputs
       kits19_io_oracle.py read DIR        nibabel/numpy read what the C++ wrote
       kits19_io_oracle.py prepare CASE_DIR MIN_SIZE OUT_PREFIX
"""
import os
import sys

import nibabel
import numpy as np
import torch
import torch.nn.functional as F


def dump(path, array):
    np.ascontiguousarray(array, dtype=np.float32).tofile(path)


def write(d):
    rng = np.random.default_rng(3)
    # int16 with scaling, uint8, float32; shapes with distinct sizes so any
    # axis mix-up shows.
    cases = [("scaled.nii.gz", np.int16, (7, 5, 3), 2.0, -1024.0),
             ("labels.nii", np.uint8, (4, 6, 5), None, None),
             ("floats.nii.gz", np.float32, (3, 4, 6), None, None)]
    for name, dtype, shape, slope, inter in cases:
        data = (rng.integers(0, 200, size=shape)).astype(dtype)
        img = nibabel.Nifti1Image(data, np.diag([0.8, 0.7, 2.5, 1.0]))
        if slope is not None:
            img.header.set_slope_inter(slope, inter)
        nibabel.save(img, os.path.join(d, name))
        dump(os.path.join(d, name + ".expected"), nibabel.load(os.path.join(d, name)).get_fdata())
    np.save(os.path.join(d, "numpy_f4.npy"), np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4) / 7)
    np.save(os.path.join(d, "numpy_u1.npy"), (np.arange(5 * 3, dtype=np.uint8) % 3).reshape(1, 5, 3))
    np.save(os.path.join(d, "numpy_i8.npy"), np.zeros(3, dtype=np.int64))
    # Resampling: a random volume, up and down on different axes.
    vol = rng.random((6, 9, 5), dtype=np.float32)
    dump(os.path.join(d, "resample_in.f32"), vol)
    lab = rng.integers(0, 3, size=(6, 9, 5)).astype(np.uint8)
    lab.tofile(os.path.join(d, "resample_in.u8"))
    t = torch.from_numpy(vol)[None, None]
    dump(os.path.join(d, "trilinear.f32"), F.interpolate(t, size=(11, 4, 7), mode="trilinear", align_corners=True)[0, 0].numpy())
    lt = torch.from_numpy(lab)[None, None]
    F.interpolate(lt, size=(11, 4, 7), mode="nearest")[0, 0].numpy().tofile(os.path.join(d, "nearest.u8"))


def read(d):
    img = nibabel.load(os.path.join(d, "ours.nii.gz"))
    dump(os.path.join(d, "ours.nii.gz.nibabel"), img.get_fdata())
    print(" ".join(str(float(s)) for s in img.header["pixdim"][1:4]))
    a = np.load(os.path.join(d, "ours_f4.npy"))
    b = np.load(os.path.join(d, "ours_u1.npy"))
    assert a.dtype == np.float32 and a.shape == (1, 3, 2, 5), (a.dtype, a.shape)
    assert b.dtype == np.uint8 and b.shape == (1, 3, 2, 5), (b.dtype, b.shape)
    assert np.array_equal(a.ravel(), np.arange(30, dtype=np.float32) / 3), a
    assert np.array_equal(b.ravel(), np.arange(30) % 3), b


def prepare(case_dir, min_size, prefix):
    image = nibabel.load(os.path.join(case_dir, "imaging.nii.gz"))
    label = nibabel.load(os.path.join(case_dir, "segmentation.nii.gz"))
    spacing = image.header["pixdim"][1:4].tolist()
    image = np.expand_dims(image.get_fdata().astype(np.float32), 0)
    label = np.expand_dims(label.get_fdata().astype(np.uint8), 0)
    target = [1.6, 1.2, 1.2]
    if spacing != target:
        shape = (np.array(spacing) / np.array(target) * np.array(image.shape[1:])).astype(int).tolist()
        image = F.interpolate(torch.from_numpy(image[None]), size=shape, mode="trilinear", align_corners=True)[0].numpy()
        label = F.interpolate(torch.from_numpy(label[None]), size=shape, mode="nearest")[0].numpy()
    image = (np.clip(image, -79, 304) - 101.0) / 76.9
    bounds = [max(0, min_size - s) for s in image.shape[1:]]
    pads = [(0, 0)] + [(b // 2, b - b // 2) for b in bounds]
    image = np.pad(image, pads, mode="edge")
    label = np.pad(label, pads, mode="edge")
    np.save(prefix + "_x.npy", image.astype(np.float32))
    np.save(prefix + "_y.npy", label)


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    elif sys.argv[1] == "read":
        read(sys.argv[2])
    else:
        prepare(sys.argv[2], int(sys.argv[3]), sys.argv[4])
