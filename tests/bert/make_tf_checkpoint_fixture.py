"""TensorFlow-written checkpoints for tests/bert/tf_checkpoint_test.cc.

Run by hand, with a Python that has TensorFlow (kept out of the project's
dependencies), from the repository root:

    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python tests/bert/make_tf_checkpoint_fixture.py write tests/bert/fixtures

It writes, with TensorFlow's own savers:
  tiny_bert/model.ckpt-28252.*  a tiny BERT (2 layers, hidden 32, 4 heads,
      intermediate 64, vocab 97, 40 positions) under the MLPerf reference's
      variable names, with LAMB/Adam-like slots and global_step beside it, in
      the reference's format (tf.compat.v1.train.Saver, one shard);
  dtypes/sharded.*  variables on three devices saved with sharded=True (three
      .data shards) in float32, float16, bfloat16, int32, int64, float64, bool
      and string, and a variable partitioned into two slices;
  tf2/ckpt.*  an object-based tf.train.Checkpoint (TF2 names and the string
      object graph);
and for each the values TensorFlow holds, as <name>_expected.safetensors
under the checkpoint's names (numpy only; F64, BOOL and string tensors are
left out). tiny_bert_hf.safetensors holds the same tiny BERT under Hugging
Face's BertForPreTraining names, converted here independently of the C++
mapping.

The C++ test also calls `verify PREFIX EXPECTED.safetensors`, which reads a
checkpoint with TensorFlow and compares every tensor bit for bit with the
safetensors file (exit 0 when equal), when it finds TensorFlow.
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
BF16 = tf.bfloat16.as_numpy_dtype
ST_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": BF16, "I32": np.int32,
             "I64": np.int64, "U8": np.uint8}
ST_NAMES = {np.dtype(v): k for k, v in ST_DTYPES.items()}

VOCAB, HIDDEN, LAYERS, INTERMEDIATE, POSITIONS, TYPES = 97, 32, 2, 64, 40, 2
GLOBAL_STEP = 28252


def write_safetensors(path, tensors):
    """{name: numpy array} -> a safetensors file (dtypes in ST_DTYPES only)."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.asarray(tensors[name])  # ascontiguousarray would make scalars 1-d
        raw = a.tobytes(order="C")
        header[name] = {"dtype": ST_NAMES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        body = data[8 + n + begin:8 + n + end]
        out[name] = np.frombuffer(body, dtype=ST_DTYPES[e["dtype"]]).reshape(e["shape"])
    return out


def tiny_bert_weights(rng):
    """The reference's trainable variables: {TF name: float32 array}."""
    def normal(*shape):
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    w = {
        "bert/embeddings/word_embeddings": normal(VOCAB, HIDDEN),
        "bert/embeddings/position_embeddings": normal(POSITIONS, HIDDEN),
        "bert/embeddings/token_type_embeddings": normal(TYPES, HIDDEN),
        "bert/embeddings/LayerNorm/gamma": 1 + normal(HIDDEN),
        "bert/embeddings/LayerNorm/beta": normal(HIDDEN),
    }
    for i in range(LAYERS):
        p = f"bert/encoder/layer_{i}/"
        for part in ("query", "key", "value"):
            w[p + f"attention/self/{part}/kernel"] = normal(HIDDEN, HIDDEN)
            w[p + f"attention/self/{part}/bias"] = normal(HIDDEN)
        w[p + "attention/output/dense/kernel"] = normal(HIDDEN, HIDDEN)
        w[p + "attention/output/dense/bias"] = normal(HIDDEN)
        w[p + "attention/output/LayerNorm/gamma"] = 1 + normal(HIDDEN)
        w[p + "attention/output/LayerNorm/beta"] = normal(HIDDEN)
        w[p + "intermediate/dense/kernel"] = normal(HIDDEN, INTERMEDIATE)
        w[p + "intermediate/dense/bias"] = normal(INTERMEDIATE)
        w[p + "output/dense/kernel"] = normal(INTERMEDIATE, HIDDEN)
        w[p + "output/dense/bias"] = normal(HIDDEN)
        w[p + "output/LayerNorm/gamma"] = 1 + normal(HIDDEN)
        w[p + "output/LayerNorm/beta"] = normal(HIDDEN)
    w["bert/pooler/dense/kernel"] = normal(HIDDEN, HIDDEN)
    w["bert/pooler/dense/bias"] = normal(HIDDEN)
    w["cls/predictions/transform/dense/kernel"] = normal(HIDDEN, HIDDEN)
    w["cls/predictions/transform/dense/bias"] = normal(HIDDEN)
    w["cls/predictions/transform/LayerNorm/gamma"] = 1 + normal(HIDDEN)
    w["cls/predictions/transform/LayerNorm/beta"] = normal(HIDDEN)
    w["cls/predictions/output_bias"] = normal(VOCAB)
    w["cls/seq_relationship/output_weights"] = normal(2, HIDDEN)
    w["cls/seq_relationship/output_bias"] = normal(2)
    return w


def to_hf(w):
    """TF names and layouts -> transformers' BertForPreTraining state_dict."""
    hf = {}
    for name, a in w.items():
        n = name.replace("/", ".").replace("layer_", "layer.")
        n = n.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta",
                                                                     "LayerNorm.bias")
        if n.endswith(".kernel"):
            n, a = n[:-len(".kernel")] + ".weight", a.T  # TF dense kernels are [in, out]
        n = n.replace("embeddings.word_embeddings", "embeddings.word_embeddings.weight")
        n = n.replace("embeddings.position_embeddings", "embeddings.position_embeddings.weight")
        n = n.replace("embeddings.token_type_embeddings",
                      "embeddings.token_type_embeddings.weight")
        n = n.replace("cls.predictions.output_bias", "cls.predictions.bias")
        n = n.replace("cls.seq_relationship.output_weights", "cls.seq_relationship.weight")
        n = n.replace("cls.seq_relationship.output_bias", "cls.seq_relationship.bias")
        hf[n] = np.ascontiguousarray(a)
    # A buffer transformers saves and the loader must ignore.
    hf["bert.embeddings.position_ids"] = np.arange(POSITIONS, dtype=np.int64)[None, :]
    return hf


def save_v1(prefix, variables, sharded=False, devices=1, global_step=None):
    """Saves {name: (device, value)} with tf.compat.v1.train.Saver."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    graph = tf.Graph()
    with graph.as_default():
        var_list = {}
        for name, (device, value) in variables.items():
            with tf.device(device):
                var_list[name] = tf1.Variable(value, name=name.replace("/", "_"))
        with tf.device("/cpu:0"):
            part = None
            if sharded:
                part = tf1.get_variable(
                    "partitioned", shape=[4, 3], dtype=tf.float32,
                    initializer=tf1.random_normal_initializer(seed=1),
                    partitioner=tf1.fixed_size_partitioner(2))
        saver = tf1.train.Saver(var_list=var_list if part is None else
                                {**var_list, "partitioned": list(part)},
                                sharded=sharded, write_version=tf1.train.SaverDef.V2)
        config = tf1.ConfigProto(device_count={"CPU": devices})
        with tf1.Session(graph=graph, config=config) as sess:
            sess.run(tf1.global_variables_initializer())
            saver.save(sess, prefix, global_step=global_step, write_meta_graph=False,
                       write_state=False)


def tf_values(prefix):
    """Every tensor of the checkpoint as TensorFlow reads it."""
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def expected(values):
    """The tensors the C++ reader reads: bool, float64, strings and the
    partitioned variable are left out."""
    arrays = {k: np.asarray(v) for k, v in values.items() if k != "partitioned"}
    return {k: v for k, v in arrays.items() if v.dtype in ST_NAMES}


def write(out):
    rng = np.random.default_rng(20240528)

    # (a) The reference's layout: one shard, trainable weights, slots, step.
    weights = tiny_bert_weights(rng)
    variables = {name: ("/cpu:0", value) for name, value in weights.items()}
    for slot in ("bert/embeddings/word_embeddings", "bert/encoder/layer_1/output/dense/kernel",
                 "cls/predictions/output_bias"):
        for suffix in ("adam_m", "adam_v"):
            shape = weights[slot].shape
            variables[f"{slot}/{suffix}"] = ("/cpu:0", rng.random(shape).astype(np.float32))
    variables["bert/pooler/dense/bias/lamb_m"] = ("/cpu:0", np.zeros(HIDDEN, np.float32))
    variables["global_step"] = ("/cpu:0", np.int64(GLOBAL_STEP))
    shutil.rmtree(os.path.join(out, "tiny_bert"), ignore_errors=True)
    prefix = os.path.join(out, "tiny_bert", "model.ckpt")
    save_v1(prefix, variables, global_step=GLOBAL_STEP)
    values = tf_values(f"{prefix}-{GLOBAL_STEP}")
    for name, value in weights.items():
        assert np.array_equal(values[name], value), name
    write_safetensors(os.path.join(out, "tiny_bert_expected.safetensors"), expected(values))
    write_safetensors(os.path.join(out, "tiny_bert_hf.safetensors"), to_hf(weights))

    # (b) Three shards, every dtype BERT might hold and some it never does.
    def floats(*shape):
        return rng.standard_normal(shape).astype(np.float32) * 3

    variables = {
        "shard0/float32": ("/cpu:0", floats(3, 5)),
        "shard0/int64_scalar": ("/cpu:0", np.int64(-(2**40) - 3)),
        "shard1/float16": ("/cpu:1", floats(4, 2, 3).astype(np.float16)),
        "shard1/int32": ("/cpu:1", rng.integers(-2**31, 2**31 - 1, (7,), dtype=np.int32)),
        "shard1/float64": ("/cpu:1", floats(2).astype(np.float64)),
        "shard2/bfloat16": ("/cpu:2", floats(6, 4).astype(BF16)),
        "shard2/bool": ("/cpu:2", np.array([True, False, True])),
        "shard2/string": ("/cpu:2", np.array([b"bert", b"large"])),
        "shard2/empty": ("/cpu:2", np.zeros((0, 4), np.float32)),
    }
    shutil.rmtree(os.path.join(out, "dtypes"), ignore_errors=True)
    prefix = os.path.join(out, "dtypes", "sharded")
    save_v1(prefix, variables, sharded=True, devices=3)
    assert os.path.exists(prefix + ".data-00002-of-00003"), "expected three shards"
    write_safetensors(os.path.join(out, "dtypes_expected.safetensors"), expected(tf_values(prefix)))

    # (c) TF2's object-based checkpoint.
    shutil.rmtree(os.path.join(out, "tf2"), ignore_errors=True)
    prefix = os.path.join(out, "tf2", "ckpt")
    ckpt = tf.train.Checkpoint(step=tf.Variable(GLOBAL_STEP, dtype=tf.int64),
                               kernel=tf.Variable(floats(3, 2)))
    ckpt.write(prefix)
    write_safetensors(os.path.join(out, "tf2_expected.safetensors"), expected(tf_values(prefix)))


def verify(prefix, expected_path):
    """TensorFlow's reading of `prefix` against the safetensors file."""
    want = read_safetensors(expected_path)
    got = tf_values(prefix)
    if sorted(want) != sorted(got):
        print(f"names differ: {sorted(want)} vs {sorted(got)}")
        return 1
    for name, w in want.items():
        g = np.asarray(got[name])
        if g.dtype != w.dtype or g.shape != w.shape or g.tobytes() != w.tobytes():
            print(f"{name}: TensorFlow read {g.dtype} {g.shape}, expected {w.dtype} {w.shape}")
            return 1
    print(f"ok: {len(want)} tensors")
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        write(sys.argv[2])
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "verify":
        return verify(sys.argv[2], sys.argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
