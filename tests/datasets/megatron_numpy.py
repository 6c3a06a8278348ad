"""The NumPy side of datasets_megatron_test (run with /usr/bin/python3).

A transcription, in NumPy, of what Megatron's data code does, written from
its documented behaviour: the indexed dataset layout (.bin/.idx) and
GPTDataset's document, sample and shuffle indices drawn from
numpy.random.RandomState(seed). The C++ test compares its own reading and
building with the arrays this script saves.

write PREFIX TYPE DOCS SEED: a dataset of DOCS documents of random lengths
  (2 to 40 tokens) and ids, TYPE uint16 or int32.
index PREFIX OUT SEQ SEED SAMPLES EXTRA DROP: the three indices and the
  tokens of every sample, as OUT_documents.npy, OUT_samples.npy,
  OUT_shuffle.npy, OUT_tokens.npy (SAMPLES 0: one epoch).
random OUT: RandomState draws the generator test compares with.
"""
import struct
import sys

import numpy as np

CODES = {"uint16": 8, "int32": 4}


def write(prefix, type_name, docs, seed):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(type_name)
    lengths = rng.integers(2, 41, size=docs).astype(np.int32)
    high = 60000 if type_name == "uint16" else 200000
    with open(prefix + ".bin", "wb") as f:
        for n in lengths:
            f.write(rng.integers(0, high, size=n).astype(dtype).tobytes())
    pointers = np.concatenate([[0], np.cumsum(lengths.astype(np.int64) * dtype.itemsize)[:-1]])
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", CODES[type_name]))
        f.write(struct.pack("<Q", docs))
        f.write(struct.pack("<Q", docs + 1))
        f.write(lengths.tobytes())
        f.write(pointers.astype(np.int64).tobytes())
        f.write(np.arange(docs + 1, dtype=np.int64).tobytes())


def read(prefix):
    with open(prefix + ".idx", "rb") as f:
        head = f.read(34)
    code = head[17]
    n, d = struct.unpack("<QQ", head[18:34])
    dtype = {8: np.uint16, 4: np.int32}[code]
    idx = np.memmap(prefix + ".idx", mode="r")
    lengths = np.frombuffer(idx, dtype=np.int32, count=n, offset=34)
    pointers = np.frombuffer(idx, dtype=np.int64, count=n, offset=34 + 4 * n)
    data = np.memmap(prefix + ".bin", mode="r", dtype=np.uint8)
    size = np.dtype(dtype).itemsize

    def sequence(i, offset=0, length=None):
        count = lengths[i] - offset if length is None else length
        start = pointers[i] + offset * size
        return np.frombuffer(data, dtype=dtype, count=count, offset=start)

    return lengths, sequence


def index(prefix, out, seq, seed, samples, extra, drop):
    lengths, sequence = read(prefix)
    exposed = np.arange(len(lengths), dtype=np.int32)
    per_epoch = int(lengths[exposed].sum())
    epochs = 1
    if samples:
        tokens = per_epoch
        while tokens < samples * seq + extra:
            epochs += 1
            tokens += per_epoch
    separate = False
    if epochs > 1:
        before_final = ((epochs - 1) * per_epoch - extra) // seq
        per_epoch_samples = (per_epoch - extra) // seq
        separate = samples - before_final < int(0.80 * per_epoch_samples)
    state = np.random.RandomState(seed)

    def documents_for(n):
        d = np.tile(exposed, n).astype(np.int32)
        state.shuffle(d)
        return d

    if separate:
        documents = np.concatenate([documents_for(epochs - 1), documents_for(1)])
    else:
        documents = documents_for(epochs)

    total = epochs * per_epoch - extra
    count = total // seq if drop else int(np.ceil(np.float32(total) / np.float32(seq)))
    bounds = [(0, 0)]
    position, offset = 0, 0
    while len(bounds) <= count:
        remaining = seq + extra
        while remaining != 0:
            length = int(lengths[documents[position]]) - offset
            remaining -= length
            if remaining <= 0:
                offset += remaining + length - extra
                remaining = 0
            elif position == len(documents) - 1:
                offset = int(lengths[documents[position]]) - extra
                break
            else:
                position += 1
                offset = 0
        bounds.append((position, offset))
    bounds = np.array(bounds, dtype=np.int64)

    def shuffled(first, last):
        s = np.arange(first, last, dtype=np.int64)
        state.shuffle(s)
        return s

    if separate:
        order = np.concatenate([shuffled(0, before_final), shuffled(before_final, count)])
    else:
        order = shuffled(0, count)

    want = seq + extra
    tokens = np.full((count, want), -1, dtype=np.int64)
    for i, k in enumerate(order):
        (p0, o0), (p1, o1) = bounds[k], bounds[k + 1]
        if p0 == p1:
            parts = [sequence(documents[p0], o0, o1 - o0 + extra)]
        else:
            parts = [sequence(documents[p0], o0)]
            parts += [sequence(documents[p]) for p in range(p0 + 1, p1)]
            parts.append(sequence(documents[p1], 0, o1 + extra))
        row = np.concatenate(parts).astype(np.int64)
        tokens[i, : len(row)] = row
    np.save(out + "_documents.npy", documents.astype(np.int32))
    np.save(out + "_samples.npy", bounds.reshape(-1))
    np.save(out + "_shuffle.npy", order)
    np.save(out + "_tokens.npy", tokens.reshape(-1))


def random(out):
    shuffles = []
    for seed, n in [(0, 10), (1234, 1000), (4294967295, 77), (99, 70000)]:
        a = np.arange(n, dtype=np.int64)
        np.random.RandomState(seed).shuffle(a)
        shuffles.append(a)
    np.save(out + "_shuffles.npy", np.concatenate(shuffles))
    wide = np.random.RandomState(7).randint(0, 2**40 + 7, size=64, dtype=np.int64)
    np.save(out + "_wide.npy", wide)


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "write":
        write(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif command == "index":
        index(sys.argv[2], sys.argv[3], *map(int, sys.argv[4:9]))
    elif command == "random":
        random(sys.argv[2])
    else:
        sys.exit(f"unknown command {command}")
