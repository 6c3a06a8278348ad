"""The PyTorch side of dlrm_parity_test: a transcription of the reference's
torchrec DLRM_DCN (dense arch, EmbeddingBag sum pooling, low-rank cross net,
over arch) loaded with the C++ model's weights, run on its batch in fp64 and
fp32, one torch.optim.Adagrad step (sparse for the tables). Compares with the
C++ results; exits 1 naming what differs."""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read as read_safetensors  # noqa: E402


def build(weights, tables, cross_layers, dtype, sparse):
    """Parameters as torchrec names them, as leaf tensors of `dtype`."""
    p = {k: v.to(dtype).clone().requires_grad_(True)
         for k, v in weights.items() if not k.endswith(".adagrad_sum")}
    bags = []
    for t in range(tables):
        w = p[f"sparse_arch.embedding_bag_collection.embedding_bags.t_cat_{t}.weight"]
        bag = torch.nn.EmbeddingBag(w.shape[0], w.shape[1], mode="sum", sparse=sparse).to(dtype)
        with torch.no_grad():
            bag.weight.copy_(w)
        bags.append(bag)
    return p, bags


def mlp(x, p, prefix, count, relu_last):
    for i in range(count):
        x = F.linear(x, p[f"{prefix}{i}._linear.weight"], p[f"{prefix}{i}._linear.bias"])
        if relu_last or i + 1 < count:
            x = torch.relu(x)
    return x


def forward(p, bags, batch, tables, cross_layers, dtype):
    bottom = sum(1 for k in p if k.startswith("dense_arch.") and k.endswith(".weight"))
    top = sum(1 for k in p if k.startswith("over_arch.model.0.") and k.endswith(".weight"))
    d = mlp(batch["dense"].to(dtype), p, "dense_arch.model._mlp.", bottom, True)
    pooled = [bags[t](batch[f"ids.{t}"].long()) for t in range(tables)]
    x0 = torch.cat([d] + pooled, dim=1)
    x = x0
    for l in range(cross_layers):
        low = F.linear(x, p[f"inter_arch.crossnet.V_kernels.{l}"])
        x = x0 * F.linear(low, p[f"inter_arch.crossnet.W_kernels.{l}"],
                          p[f"inter_arch.crossnet.bias.{l}"]) + x
    x = mlp(x, p, "over_arch.model.0._mlp.", top, True)
    return F.linear(x, p["over_arch.model.1.weight"], p["over_arch.model.1.bias"]).squeeze(1)


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / max(float(b.norm()), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--weights", "--batch", "--ours"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--eps", type=float, required=True)
    ap.add_argument("--cross-layers", type=int, required=True)
    args = ap.parse_args()
    weights = read_safetensors(args.weights)
    batch = read_safetensors(args.batch)
    ours = read_safetensors(args.ours)
    tables = sum(1 for k in batch if k.startswith("ids."))
    failures = []

    def check(name, mine, exact, single):
        """Ours within 10x of PyTorch fp32's own error against fp64 (and 1e-5)."""
        e_ours, e_torch = rel(mine, exact), rel(single, exact)
        ok = e_ours <= max(10 * e_torch, 1e-5)
        print(f"{name}: ours {e_ours:.2e}, torch fp32 {e_torch:.2e}" + ("" if ok else "  <-- FAIL"))
        if not ok:
            failures.append(name)

    results = {}
    for dtype in (torch.float64, torch.float32):
        p, bags = build(weights, tables, args.cross_layers, dtype, sparse=True)
        logits = forward(p, bags, batch, tables, args.cross_layers, dtype)
        loss = F.binary_cross_entropy_with_logits(logits, batch["labels"].to(dtype))
        loss.backward()
        dense = [v for k, v in p.items() if not k.startswith("sparse_arch.")]
        names = [k for k in p if not k.startswith("sparse_arch.")]
        grads = {k: p[k].grad.clone() for k in names}
        table_grads = [bags[t].weight.grad.coalesce() for t in range(tables)]
        opt = torch.optim.Adagrad(dense, lr=args.lr, eps=args.eps)
        opt.step()
        sparse_opt = torch.optim.Adagrad([b.weight for b in bags], lr=args.lr, eps=args.eps)
        sparse_opt.step()
        results[dtype] = dict(logits=logits.detach(), loss=loss.detach(), grads=grads,
                              table_grads=table_grads, params={k: p[k].detach() for k in names},
                              tables=[b.weight.detach() for b in bags],
                              sums=[sparse_opt.state[b.weight]["sum"].to_dense() for b in bags])
    exact, single = results[torch.float64], results[torch.float32]
    check("logits", ours["logits"], exact["logits"], single["logits"])
    check("loss", ours["loss"], exact["loss"].reshape(1), single["loss"].reshape(1))
    for k in exact["grads"]:
        check("grad/" + k, ours["grad/" + k], exact["grads"][k], single["grads"][k])
        check("stepped/" + k, ours["stepped/" + k], exact["params"][k], single["params"][k])
    for t in range(tables):
        g64, g32 = exact["table_grads"][t], single["table_grads"][t]
        rows = g64.indices()[0]
        if not torch.equal(ours[f"rows.{t}"].long(), rows):
            failures.append(f"rows.{t}")
            print(f"rows.{t}: ours {ours[f'rows.{t}'].tolist()}, torch {rows.tolist()}  <-- FAIL")
            continue
        check(f"row_grads.{t}", ours[f"row_grads.{t}"], g64.values(), g32.values())
        name = f"sparse_arch.embedding_bag_collection.embedding_bags.t_cat_{t}.weight"
        check(f"stepped/{name}", ours["stepped/" + name], exact["tables"][t], single["tables"][t])
        check(f"stepped/{name}.adagrad_sum", ours[f"stepped/{name}.adagrad_sum"],
              exact["sums"][t], single["sums"][t])
        # Untouched rows: exactly the initial weights.
        untouched = torch.ones(weights[name].shape[0], dtype=torch.bool)
        untouched[rows] = False
        if not torch.equal(ours["stepped/" + name][untouched], weights[name][untouched]):
            failures.append(f"untouched rows of table {t}")
    if failures:
        print("differs: " + ", ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
