#!/usr/bin/env python3
"""Writes the starting corpora of the tests/fuzz targets into tests/fuzz/seeds/
(committed; small, valid files of each format, made with the field's own
writers where there is one: Pillow, nibabel, numpy), plus package trees from a
run_closed demo package when one is given.

usage: make_seeds.py [DEMO_PACKAGE_DIR]   (run with /usr/bin/python3)
"""
import io
import json
import os
import struct
import sys
import tempfile

import nibabel
import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, "seeds")


def put(target, name, data):
    os.makedirs(os.path.join(SEEDS, target), exist_ok=True)
    with open(os.path.join(SEEDS, target, name), "wb") as f:
        f.write(data)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(records):
    out = b""
    for r in records:
        length = struct.pack("<Q", len(r))
        out += length + struct.pack("<I", masked(crc32c(length))) + r
        out += struct.pack("<I", masked(crc32c(r)))
    return out


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(number, wire, payload):
    key = varint(number << 3 | wire)
    return key + (varint(len(payload)) + payload if wire == 2 else payload)


def example(encoded, label):
    """A tf.Example with image/encoded (bytes) and image/class/label (int64)."""
    def feature_entry(key, feature):
        return field(1, 2, field(1, 2, key.encode()) + field(2, 2, feature))
    bytes_feature = field(1, 2, field(1, 2, encoded))            # Feature.bytes_list
    int_feature = field(3, 2, field(1, 2, varint(label)))          # Feature.int64_list, packed
    features = feature_entry("image/encoded", bytes_feature) + \
        feature_entry("image/class/label", int_feature)
    return field(1, 2, features)


def images():
    rng = np.random.default_rng(1)
    rgb = Image.fromarray(rng.integers(0, 255, (17, 23, 3), dtype=np.uint8))
    out = {}
    for name, img, fmt, kw in (("rgb.jpg", rgb, "JPEG", {"quality": 80}),
                               ("grey.jpg", rgb.convert("L"), "JPEG", {}),
                               ("cmyk.jpg", rgb.convert("CMYK"), "JPEG", {}),
                               ("progressive.jpg", rgb, "JPEG", {"progressive": True}),
                               ("rgb.png", rgb, "PNG", {}),
                               ("palette.png", rgb.convert("P"), "PNG", {})):
        buf = io.BytesIO()
        img.save(buf, fmt, **kw)
        out[name] = buf.getvalue()
    return out


def main():
    for name, data in images().items():
        put("image_decode_fuzzer", name, bytes([8, 0]) + data)
        put("image_decode_fuzzer", "region_" + name, bytes([4, 0x23]) + data)
    jpeg = images()["rgb.jpg"]
    put("tfrecord_fuzzer", "two_records", tfrecord([example(jpeg, 3), example(b"x", 1000)]))
    put("tfrecord_fuzzer", "empty_record", tfrecord([b""]))

    rng = np.random.default_rng(2)
    with tempfile.TemporaryDirectory() as tmp:
        for name, arr in (("image_i16", rng.integers(-1000, 1000, (5, 6, 7)).astype(np.int16)),
                          ("label_u8", rng.integers(0, 3, (5, 6, 7)).astype(np.uint8)),
                          ("image_f32", rng.standard_normal((4, 3, 5)).astype(np.float32))):
            for ext in (".nii", ".nii.gz"):
                img = nibabel.Nifti1Image(arr, np.diag([1.6, 1.2, 1.2, 1.0]))
                path = os.path.join(tmp, name + ext)
                nibabel.save(img, path)
                with open(path, "rb") as f:
                    put("kits19_fuzzer", name + ext, b"\x00" + f.read())
        for name, arr in (("x.npy", rng.standard_normal((1, 4, 5, 6)).astype(np.float32)),
                          ("y.npy", rng.integers(0, 3, (1, 4, 5, 6)).astype(np.uint8))):
            buf = io.BytesIO()
            np.save(buf, arr)
            put("kits19_fuzzer", name, b"\x01" + buf.getvalue())

    header = {"__metadata__": {"format": "pt"},
              "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "b": {"dtype": "BF16", "shape": [4], "data_offsets": [24, 32]}}
    text = json.dumps(header).encode()
    put("safetensors_fuzzer", "two_tensors",
        struct.pack("<Q", len(text)) + text + bytes(range(32)))

    if len(sys.argv) > 1:
        package_seeds(sys.argv[1])


def package_seeds(package):
    """Each benchmark folder of the demo package as one tree: the system
    description and the first three result logs, paths under org/."""
    systems = os.path.join(package, "systems")
    for system in sorted(os.listdir(os.path.join(package, "results"))):
        for bench in sorted(os.listdir(os.path.join(package, "results", system))):
            entries = []
            desc = os.path.join(systems, system + ".json")
            if os.path.exists(desc):
                entries.append((f"org/systems/{system}.json", open(desc, "rb").read()))
            folder = os.path.join(package, "results", system, bench)
            for log in sorted(os.listdir(folder))[:3]:
                entries.append((f"org/results/{system}/{bench}/{log}",
                                open(os.path.join(folder, log), "rb").read()))
            data = b"".join(p.encode() + b"\0" + c + b"\0" for p, c in entries)
            put("package_tree_fuzzer", f"{bench}", data)


if __name__ == "__main__":
    main()
