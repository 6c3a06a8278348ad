"""PyTorch oracle for tests/core/torch_parity_test.cc.

Reads the inputs the C++ test wrote (safetensors, parsed here with struct and
json so that no code is shared with the C++ reader), computes each op's
forward output and, by autograd on sum(y * dy), its input gradients with
PyTorch, and writes them back as safetensors. Run with /usr/bin/python3
(Debian's python3-torch).

usage: torch_parity.py INPUT.safetensors OUTPUT.safetensors
"""
import json
import math
import struct
import sys

import torch
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "I32": torch.int32}
NAMES = {torch.float32: "F32", torch.int32: "I32"}


def read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(body[begin:end]), dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"]).clone()
    return out


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        raw = t.numpy().tobytes()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def grads(fn, inputs, dy, out, prefix, names):
    """y = fn(*inputs); gradients of sum(y * dy) for inputs named in names."""
    leaves = [x.clone().requires_grad_(n is not None) for x, n in zip(inputs, names)]
    y = fn(*leaves)
    out[prefix + "y"] = y
    if dy is not None:
        (y * dy).sum().backward()
    else:
        y.backward()
    for leaf, n in zip(leaves, names):
        if n is not None:
            out[prefix + n] = leaf.grad


def main():
    t = read(sys.argv[1])
    out = {}
    g = lambda k: t[k]

    grads(lambda x, w: F.conv2d(x, w, stride=2, padding=1), [g("conv2d/x"), g("conv2d/w")],
          g("conv2d/dy"), out, "conv2d/", ["dx", "dw"])
    for name, stride in (("grouped", 1), ("grouped_s2", 2)):
        grads(lambda x, w, stride=stride: F.conv2d(x, w, stride=stride, padding=1, groups=32),
              [g(name + "/x"), g(name + "/w")], g(name + "/dy"), out, name + "/", ["dx", "dw"])
    grads(lambda x, w: F.conv3d(x, w, stride=1, padding=1), [g("conv3d/x"), g("conv3d/w")],
          g("conv3d/dy"), out, "conv3d/", ["dx", "dw"])
    grads(lambda x, w, b: F.conv_transpose3d(x, w, b, stride=2),
          [g("convT3d/x"), g("convT3d/w"), g("convT3d/b")], g("convT3d/dy"), out, "convT3d/",
          ["dx", "dw", "db"])

    rm, rv = g("bn/running_mean").clone(), g("bn/running_var").clone()
    grads(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5),
          [g("bn/x"), g("bn/gamma"), g("bn/beta")], g("bn/dy"), out, "bn/",
          ["dx", "dgamma", "dbeta"])
    out["bn/running_mean"], out["bn/running_var"] = rm, rv
    grads(lambda x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-5),
          [g("in/x"), g("in/gamma"), g("in/beta")], g("in/dy"), out, "in/",
          ["dx", "dgamma", "dbeta"])
    grads(lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-12),
          [g("ln/x"), g("ln/gamma"), g("ln/beta")], g("ln/dy"), out, "ln/",
          ["dx", "dgamma", "dbeta"])

    grads(F.relu, [g("relu/x")], g("relu/dy"), out, "relu/", ["dx"])
    grads(lambda x: F.gelu(x, approximate="tanh"), [g("gelu/x")], g("gelu/dy"), out, "gelu/",
          ["dx"])
    grads(lambda x: F.softmax(x, dim=-1), [g("softmax/x")], g("softmax/dy"), out, "softmax/",
          ["dx"])
    grads(lambda x: F.max_pool2d(x, 3, stride=2, padding=1), [g("maxpool/x")],
          g("maxpool/dy"), out, "maxpool/", ["dx"])
    grads(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=True),
          [g("avgpool/x")], g("avgpool/dy"), out, "avgpool/", ["dx"])
    grads(lambda x: x.mean(dim=(2, 3)), [g("gap/x")], g("gap/dy"), out, "gap/", ["dx"])
    grads(F.linear, [g("linear/x"), g("linear/w"), g("linear/b")], g("linear/dy"), out,
          "linear/", ["dx", "dw", "db"])
    grads(lambda w: F.embedding(g("embedding/ids").long(), w), [g("embedding/table")],
          g("embedding/dy"), out, "embedding/", ["dtable"])

    def attention(q, k, v):
        mask = g("attn/mask")
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        s = s + (1.0 - mask)[:, None, None, :] * -10000.0
        return F.softmax(s, dim=-1) @ v
    grads(attention, [g("attn/q"), g("attn/k"), g("attn/v")], g("attn/dy"), out, "attn/",
          ["dq", "dk", "dv"])

    # Losses: scalar outputs, gradients of the loss itself.
    labels = g("xent/labels").long()
    grads(lambda z: F.cross_entropy(z, labels, label_smoothing=0.1), [g("xent/logits")], None,
          out, "xent/", ["dlogits"])

    def dice_ce(z):
        lab = g("dice/labels").long()
        ce = F.cross_entropy(z, lab)
        p = F.softmax(z, dim=1)
        onehot = F.one_hot(lab, z.shape[1]).movedim(-1, 1).float()
        dims = tuple(range(2, z.dim()))
        inter = (p * onehot).sum(dims)
        union = onehot.sum(dims) + p.sum(dims)
        dice = (2.0 * inter + 1e-6) / (union + 1e-6)
        return ((1.0 - dice[:, 1:]).mean() + ce) / 2.0
    grads(dice_ce, [g("dice/logits")], None, out, "dice/", ["dlogits"])

    def mlm(z):
        w = g("mlm/weights")
        nll = F.cross_entropy(z, g("mlm/labels").long(), reduction="none")
        return (w * nll).sum() / (w.sum() + 1e-5)
    grads(mlm, [g("mlm/logits")], None, out, "mlm/", ["dlogits"])

    # Channels-last: the C++ side stores activations as NHWC; permuted to
    # NCHW they are PyTorch channels_last tensors, so PyTorch takes its
    # channels_last kernels, and the results are permuted back to NHWC.
    nchw = lambda t: t.permute(0, 3, 1, 2)
    nhwc = lambda t: t.permute(0, 2, 3, 1)
    grads(lambda x, w: nhwc(F.conv2d(nchw(x), w, stride=2, padding=1)),
          [g("cl_conv/x"), g("cl_conv/w")], g("cl_conv/dy"), out, "cl_conv/", ["dx", "dw"])
    grads(lambda x, w: nhwc(F.conv2d(nchw(x), w, stride=2)),
          [g("cl_conv1x1/x"), g("cl_conv1x1/w")], g("cl_conv1x1/dy"), out, "cl_conv1x1/",
          ["dx", "dw"])
    rm, rv = g("cl_bn/running_mean").clone(), g("cl_bn/running_var").clone()
    grads(lambda x, w, b: nhwc(F.batch_norm(nchw(x), rm, rv, w, b, training=True, momentum=0.1,
                                            eps=1e-5)),
          [g("cl_bn/x"), g("cl_bn/gamma"), g("cl_bn/beta")], g("cl_bn/dy"), out, "cl_bn/",
          ["dx", "dgamma", "dbeta"])
    out["cl_bn/running_mean"], out["cl_bn/running_var"] = rm, rv
    grads(lambda x: nhwc(F.max_pool2d(nchw(x), 3, stride=2, padding=1)), [g("cl_maxpool/x")],
          g("cl_maxpool/dy"), out, "cl_maxpool/", ["dx"])
    grads(lambda x: nchw(x).mean(dim=(2, 3)), [g("cl_gap/x")], g("cl_gap/dy"), out, "cl_gap/",
          ["dx"])

    write(sys.argv[2], out)


if __name__ == "__main__":
    main()
