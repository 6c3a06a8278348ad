#!/usr/bin/env python3
"""Converts the tokenized SCROLLS GovReport set of the Llama 2 70B LoRA
reference, once, into the arrays `run_closed --bench llama2_70b_lora` reads
(no Parquet reader is packaged for the C++ build).

  scripts/convert_govreport.py PARQUET_DIR OUT_DIR

PARQUET_DIR holds train-00000-of-00001.parquet and
validation-00000-of-00001.parquet as the reference's download leaves them:
rows of input_ids and labels (transformers' labels: the token, or -100 where
the loss does not count), and optionally attention_mask. OUT_DIR receives per
split <split>_input_ids.npy and <split>_labels.npy (int32, every sample's
tokens back to back) and <split>_offsets.npy (int64, where each sample
starts), the layout datasets/govreport/tokenized_set.h describes. Padding
the attention mask excludes is dropped; it must be at the right end of a row
(with causal attention it then changes nothing before it) and carry no
counted label.

Needs pyarrow (pip install pyarrow). Reads the files a row group at a time.
Never replaces a file: an OUT_DIR already holding the arrays is refused.
Exit 0: converted; 1: the data is not what the reference publishes; 2: usage,
a missing file or pyarrow missing.
"""
import os
import pathlib
import sys

import numpy as np

IGNORED = -100
SPLITS = (("train", "train-00000-of-00001.parquet"),
          ("validation", "validation-00000-of-00001.parquet"))
ARRAYS = ("input_ids", "labels", "offsets")


class DataError(Exception):
    pass


def rows(path):
    """Yields (input_ids, labels, attention_mask or None) per row."""
    import pyarrow.parquet as pq
    parquet = pq.ParquetFile(path)
    names = parquet.schema_arrow.names
    for column in ("input_ids", "labels"):
        if column not in names:
            raise DataError(f"{path}: no {column} column (columns: {', '.join(names)})")
    columns = [c for c in ("input_ids", "labels", "attention_mask") if c in names]
    for batch in parquet.iter_batches(columns=columns):
        lists = {c: batch.column(c).to_pylist() for c in columns}
        for i in range(batch.num_rows):
            yield (lists["input_ids"][i], lists["labels"][i],
                   lists["attention_mask"][i] if "attention_mask" in lists else None)


def convert_split(path):
    """The split's three arrays from its Parquet file."""
    ids, labels, offsets = [], [], [0]
    for row, (row_ids, row_labels, mask) in enumerate(rows(path)):
        if row_ids is None or row_labels is None or len(row_ids) != len(row_labels):
            raise DataError(f"{path}: row {row}: input_ids and labels differ in length")
        tokens = np.asarray(row_ids, dtype=np.int64)
        targets = np.asarray(row_labels, dtype=np.int64)
        real = len(tokens)
        if mask is not None:
            mask = np.asarray(mask, dtype=np.int64)
            real = int(mask.sum())
            if len(mask) != len(tokens) or not (mask[:real] == 1).all() or (mask[real:] != 0).any():
                raise DataError(f"{path}: row {row}: the attention mask is not ones then zeros "
                                "(only right padding is read)")
            if (targets[real:] != IGNORED).any():
                raise DataError(f"{path}: row {row}: a padding position carries a counted label")
        if real == 0:
            raise DataError(f"{path}: row {row}: no token")
        tokens, targets = tokens[:real], targets[:real]
        if tokens.min() < 0 or tokens.max() >= 2**31:
            raise DataError(f"{path}: row {row}: a token id outside int32's non-negative range")
        if ((targets != IGNORED) & ((targets < 0) | (targets >= 2**31))).any():
            raise DataError(f"{path}: row {row}: a label neither -100 nor a token id")
        ids.append(tokens.astype(np.int32))
        labels.append(targets.astype(np.int32))
        offsets.append(offsets[-1] + real)
    if not ids:
        raise DataError(f"{path}: no rows")
    return {"input_ids": np.concatenate(ids), "labels": np.concatenate(labels),
            "offsets": np.asarray(offsets, dtype=np.int64)}


def save(path, array):
    """np.save's bytes under a temporary name, then renamed into place."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as f:
        np.save(f, array)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def main(argv):
    if len(argv) != 3:
        print("usage: convert_govreport.py PARQUET_DIR OUT_DIR", file=sys.stderr)
        return 2
    source, out = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        print("convert_govreport: needs pyarrow (pip install pyarrow)", file=sys.stderr)
        return 2
    for _, name in SPLITS:
        if not (source / name).is_file():
            print(f"convert_govreport: {source / name}: no such file", file=sys.stderr)
            return 2
    targets = [out / f"{split}_{a}.npy" for split, _ in SPLITS for a in ARRAYS]
    existing = [str(t) for t in targets if t.exists() or t.is_symlink()]
    if existing:
        print(f"convert_govreport: {existing[0]} exists; not replacing it", file=sys.stderr)
        return 2
    try:
        out.mkdir(parents=True, exist_ok=True)
        for split, name in SPLITS:
            arrays = convert_split(source / name)
            # The offsets last: a split is complete once they are there.
            for a in ARRAYS:
                save(out / f"{split}_{a}.npy", arrays[a])
            print(f"{split}: {len(arrays['offsets']) - 1} samples, "
                  f"{len(arrays['input_ids'])} tokens")
    except DataError as e:
        print(f"convert_govreport: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"convert_govreport: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
