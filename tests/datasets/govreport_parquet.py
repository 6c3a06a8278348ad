"""Writes the Llama 2 70B LoRA reference's data layout for the tests of
scripts/convert_govreport.py: train-00000-of-00001.parquet and
validation-00000-of-00001.parquet with rows of input_ids, attention_mask and
labels (the prompt masked with -100), their contents given by formulas the
C++ test recomputes (govreport_test.cc).

usage: govreport_parquet.py DIR MODE
  MODE: padded (rows right-padded to 64 with an attention mask), plain
        (rows of their own lengths, no mask), left (left padding: refused),
        counted_padding (a label on a padding position: refused)
"""
import pathlib
import sys

import pyarrow as pa
import pyarrow.parquet as pq

WIDTH = 64
ROWS = {"train": 20, "validation": 7}


def row(split, i, mode):
    s = 0 if split == "train" else 1
    length = 10 + (i * 7 + s * 3) % 40
    prompt = 3 + i % 5
    ids = [(i * 31 + t * 17 + s * 5) % 1000 for t in range(length)]
    labels = [ids[t] if t >= prompt else -100 for t in range(length)]
    if mode == "plain":
        return {"input_ids": ids, "labels": labels}
    pad = WIDTH - length
    mask = [1] * length + [0] * pad
    ids, labels = ids + [0] * pad, labels + [-100] * pad
    if mode == "left" and i == 2:
        ids, labels, mask = ids[-pad:] + ids[:-pad], labels[-pad:] + labels[:-pad], mask[-pad:] + mask[:-pad]
    if mode == "counted_padding" and i == 4:
        labels[-1] = 5
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def main():
    out, mode = pathlib.Path(sys.argv[1]), sys.argv[2]
    out.mkdir(parents=True, exist_ok=True)
    for split, n in ROWS.items():
        rows = [row(split, i, mode) for i in range(n)]
        table = pa.table({k: [r[k] for r in rows] for k in rows[0]})
        # Several row groups, as a large file has.
        pq.write_table(table, out / f"{split}-00000-of-00001.parquet", row_group_size=6)


if __name__ == "__main__":
    main()
