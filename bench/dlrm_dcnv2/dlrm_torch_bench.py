"""The PyTorch and scikit-learn peers of dlrm_bench (run with /usr/bin/python3).

bags ROWS BATCH REPS THREADS: nn.EmbeddingBag (sum, sparse gradients) over
the reference's 26 multi-hot sizes, tables of min(reference rows, ROWS)
rows of width 128: median seconds of the lookup-and-pool forward, and of
the backward plus torch.optim.Adagrad's sparse step.
step ROWS BATCH REPS THREADS [cuda]: one training step of the reference-width
DLRM-dcnv2 (torchrec's DLRM_DCN transcribed: sparse EmbeddingBags, the
cross network, the MLPs, BCEWithLogitsLoss, Adagrad on both), on the GPU
with "cuda": median seconds.
auc N: sklearn.metrics.roc_auc_score over N random scores with ties: seconds.
Each prints one line, "name seconds"."""
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

REFERENCE_ROWS = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956,
                  405282, 10, 2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152,
                  12973, 108, 36]
MULTI_HOT = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]
DIM = 128


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def ids_for(rows, batch):
    g = torch.Generator().manual_seed(3)
    return [torch.randint(0, r, (batch, h), generator=g) for r, h in zip(rows, MULTI_HOT)]


class Dlrm(torch.nn.Module):
    def __init__(self, rows):
        super().__init__()
        self.bags = torch.nn.ModuleList(
            torch.nn.EmbeddingBag(r, DIM, mode="sum", sparse=True) for r in rows)
        width = (len(rows) + 1) * DIM
        self.bottom = torch.nn.Sequential(torch.nn.Linear(13, 512), torch.nn.ReLU(),
                                          torch.nn.Linear(512, 256), torch.nn.ReLU(),
                                          torch.nn.Linear(256, DIM), torch.nn.ReLU())
        self.v = torch.nn.ParameterList(
            torch.nn.Parameter(torch.randn(512, width) * 0.01) for _ in range(3))
        self.w = torch.nn.ParameterList(
            torch.nn.Parameter(torch.randn(width, 512) * 0.01) for _ in range(3))
        self.b = torch.nn.ParameterList(torch.nn.Parameter(torch.zeros(width)) for _ in range(3))
        self.top = torch.nn.Sequential(torch.nn.Linear(width, 1024), torch.nn.ReLU(),
                                       torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                       torch.nn.Linear(1024, 512), torch.nn.ReLU(),
                                       torch.nn.Linear(512, 256), torch.nn.ReLU(),
                                       torch.nn.Linear(256, 1))

    def forward(self, dense, ids):
        x0 = torch.cat([self.bottom(dense)] + [b(i) for b, i in zip(self.bags, ids)], dim=1)
        x = x0
        for v, w, b in zip(self.v, self.w, self.b):
            x = x0 * F.linear(F.linear(x, v), w, b) + x
        return self.top(x).squeeze(1)


def bags(rows_cap, batch, reps):
    rows = [min(r, rows_cap) for r in REFERENCE_ROWS]
    tables = [torch.nn.EmbeddingBag(r, DIM, mode="sum", sparse=True) for r in rows]
    opt = torch.optim.Adagrad([t.weight for t in tables], lr=0.004, eps=1e-8)
    ids = ids_for(rows, batch)
    grads = [torch.randn(batch, DIM) for _ in tables]
    forward, update = [], []
    for rep in range(reps + 1):
        start = time.perf_counter()
        pooled = [t(i) for t, i in zip(tables, ids)]
        mid = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        torch.autograd.backward(pooled, grads)
        opt.step()
        end = time.perf_counter()
        if rep > 0:
            forward.append(mid - start)
            update.append(end - mid)
    print(f"bags_forward {median(forward):.6f}")
    print(f"bags_update {median(update):.6f}")


def step(rows_cap, batch, reps, device):
    rows = [min(r, rows_cap) for r in REFERENCE_ROWS]
    torch.manual_seed(1)
    model = Dlrm(rows).to(device)
    sparse = [b.weight for b in model.bags]
    dense = [p for n, p in model.named_parameters() if not n.startswith("bags.")]
    opts = [torch.optim.Adagrad(dense, lr=0.004, eps=1e-8),
            torch.optim.Adagrad(sparse, lr=0.004, eps=1e-8)]
    x = (torch.rand(batch, 13) * 5).to(device)
    ids = [i.to(device) for i in ids_for(rows, batch)]
    y = (torch.rand(batch) < 0.3).float().to(device)
    times = []
    for rep in range(reps + 1):
        start = time.perf_counter()
        for o in opts:
            o.zero_grad(set_to_none=True)
        F.binary_cross_entropy_with_logits(model(x, ids), y).backward()
        for o in opts:
            o.step()
        if device == "cuda":
            torch.cuda.synchronize()
        if rep > 0:
            times.append(time.perf_counter() - start)
    print(f"step {median(times):.6f}")


def auc(n):
    from sklearn.metrics import roc_auc_score
    rng = np.random.default_rng(5)
    labels = (rng.random(n) < 0.25).astype(np.int8)
    scores = (np.round((rng.random(n) + 0.1 * labels) * 1e4) / 1e4).astype(np.float32)
    start = time.perf_counter()
    value = roc_auc_score(labels, scores)
    print(f"auc {time.perf_counter() - start:.6f} {value!r}")


def main():
    what = sys.argv[1]
    if what == "auc":
        auc(int(sys.argv[2]))
        return
    rows, batch, reps, threads = (int(a) for a in sys.argv[2:6])
    torch.set_num_threads(threads)
    if what == "bags":
        bags(rows, batch, reps)
    else:
        step(rows, batch, reps, "cuda" if sys.argv[6:7] == ["cuda"] else "cpu")


if __name__ == "__main__":
    main()
