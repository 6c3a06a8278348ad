"""scipy.ndimage oracle for kits19_augment_test.cc.

For each raw uint8 label volume given as PATH:D:H:W, prints what the reference's
foreground crop (pytorch_loader.py, RandBalancedCrop.rand_foreg_cropd) derives
from it: per label value > 0, the find_objects boxes of scipy.ndimage.label's
components, and the indices numpy's argsort keeps as the two largest by
bounding-box volume, with the default sort and with a stable one.

Output, one record per line:
  volume <i>
  class <value> <number of components>
  box <lo0> <hi0> <lo1> <hi1> <lo2> <hi2>     (one per component, label order)
  largest_default <i> [<j>]
  largest_stable <i> [<j>]
"""
import sys

import numpy as np
import scipy.ndimage


def describe(label):
    # The reference labels the (1, D, H, W) array; the singleton channel axis
    # adds no neighbours, so this is the 3D face connectivity.
    label = label[np.newaxis]
    for value in np.unique(label[label > 0]):
        components, _ = scipy.ndimage.label(label == value)
        boxes = [b for b in scipy.ndimage.find_objects(components) if b is not None]
        sizes = [int(np.prod([s.stop - s.start for s in b])) for b in boxes]
        print(f"class {value} {len(boxes)}")
        for b in boxes:
            print("box", " ".join(f"{s.start} {s.stop}" for s in b[1:]))
        volumes = np.array(sizes, dtype=np.int64)
        print("largest_default", *np.argsort(volumes)[-2:])
        print("largest_stable", *np.argsort(volumes, kind="stable")[-2:])


def main():
    for i, spec in enumerate(sys.argv[1:]):
        path, d, h, w = spec.split(":")
        shape = (int(d), int(h), int(w))
        print(f"volume {i}")
        describe(np.fromfile(path, dtype=np.uint8).reshape(shape))


if __name__ == "__main__":
    main()
