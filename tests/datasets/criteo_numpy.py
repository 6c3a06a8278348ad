"""The NumPy side of datasets_criteo_test (run with /usr/bin/python3).

write DIR DAYS ROWS: day files as the reference's preprocessing leaves them
(np.save, np.savez), every value a function of (day, row, column) that the
C++ test recomputes. check DIR: loads every day file with np.load (the .npz
members mapped in place, as the reference's loader does) and prints one
"file sum" line per array, for the C++ test to compare with its own reading."""
import os
import sys
import zipfile

import numpy as np

HOT = [3, 1, 2]


def write(folder, days, rows):
    for d in range(days):
        r = np.arange(rows, dtype=np.int64)
        dense = ((d * 1000 + r[:, None] * 13 + np.arange(13)[None, :]) % 97 / 7.0).astype("<f4")
        labels = ((d + r) % 3 == 0).astype("<i4").reshape(rows, 1)
        members = {}
        for t, hot in enumerate(HOT):
            ids = (d * 7 + r[:, None] * hot + np.arange(hot)[None, :] + t) % (10 + t)
            members[str(t)] = ids.astype("<i4")
        np.save(os.path.join(folder, f"day_{d}_dense.npy"), dense)
        np.save(os.path.join(folder, f"day_{d}_labels.npy"), labels)
        np.savez(os.path.join(folder, f"day_{d}_sparse_multi_hot.npz"), **members)


def check(folder):
    names = sorted(n for n in os.listdir(folder) if n.startswith("day_"))
    for name in names:
        path = os.path.join(folder, name)
        if name.endswith(".npy"):
            a = np.load(path, mmap_mode="r")
            print(f"{name} {a.dtype.str} {'x'.join(map(str, a.shape))} {float(np.asarray(a, np.float64).sum())!r}")
        else:
            with zipfile.ZipFile(path) as z:
                assert all(i.compress_type == 0 for i in z.infolist()), "compressed member"
                assert z.testzip() is None, "bad CRC"
            with np.load(path) as npz:
                for member in sorted(npz.files, key=int):
                    a = npz[member]
                    print(f"{name}:{member} {a.dtype.str} {'x'.join(map(str, a.shape))} {float(a.astype(np.float64).sum())!r}")


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        check(sys.argv[2])
