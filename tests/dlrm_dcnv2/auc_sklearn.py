"""The oracle of auc_test: sklearn.metrics.roc_auc_score of each case in a
safetensors file (scores/<name>, labels/<name>), one "name value" line per
case, "undefined" where scikit-learn refuses (one class, a NaN score)."""
import os
import sys

from sklearn.metrics import roc_auc_score

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read  # noqa: E402


def main():
    tensors = read(sys.argv[1])
    with open(sys.argv[2], "w") as out:
        for key in sorted(k for k in tensors if k.startswith("scores/")):
            name = key.split("/", 1)[1]
            scores = tensors[key].double().numpy()
            labels = tensors["labels/" + name].numpy()
            try:
                value = repr(float(roc_auc_score(labels, scores)))
            except ValueError:
                value = "undefined"
            out.write(f"{name} {value}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
