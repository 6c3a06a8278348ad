#!/usr/bin/env bash
# scripts/gpu_check.sh on a machine without a GPU: one line, exit 0, nothing
# written. Then behind a stand-in nvidia-smi that claims a GPU (none is
# there): the binaries are found, the CUDA libraries resolved, every gpu test
# binary runs (its tests skip), every benchmark is tried, and the report
# lists them all; with a spent time budget every stage is skipped, said so;
# GPU_CHECK_SKIP and GPU_CHECK_ONLY leave stages out, said so; a test binary that dies before
# its gtest report is reported with its exit code. Skips (77) on a machine
# with a real GPU or without the CUDA build.
#
# usage: gpu_check_test.sh SOURCE_DIR BIN_DIR
set -u
root=$1
bin=$2
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "a real GPU is here: scripts/gpu_check.sh would run for real"; exit 77
fi
[[ -x $bin/core_cuda_twin_test ]] || { echo "built without CUDA"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$root/scripts/gpu_check.sh" "$tmp/none" 2>&1)
code=$?
[[ $code -eq 0 ]] || fail "exit $code without a GPU: $out"
[[ $out == "gpu_check: no NVIDIA GPU on this machine; nothing to do" ]] || fail "said: $out"
[[ ! -e $tmp/none ]] || fail "created its output folder without a GPU"

mkdir "$tmp/fake"
cat >"$tmp/fake/nvidia-smi" <<'SH'
#!/bin/sh
if [ "$1" = -L ]; then echo "GPU 0: Stand-in (UUID: GPU-0)"; else echo "Stand-in, 0 MiB"; fi
SH
chmod +x "$tmp/fake/nvidia-smi"
# A copy of the checkout's scripts beside the binaries under test, so that a
# developer's .gpu_bundle is not what gets checked.
mkdir -p "$tmp/repo/bench"
cp -r "$root/scripts" "$tmp/repo/"
cp -r "$root/bench/gpu" "$tmp/repo/bench/"
ln -s "$(dirname "$bin")" "$tmp/repo/build"
# (The CPU loader stage, the one that would really run here, is left out
# to keep this test short.)
out=$(GPU_CHECK_SKIP=loader PATH=$tmp/fake:$PATH "$tmp/repo/scripts/gpu_check.sh" "$tmp/report" 2>&1)
code=$?
[[ $code -eq 0 ]] || fail "exit $code behind the stand-in: $out"
REGISTERED=$("$bin/run_closed" --list) python3 - "$tmp/report" <<'PY' || exit 1
import json, os, sys
out = sys.argv[1]
report = json.load(open(os.path.join(out, "gpu_report.json")))
fails = []
tests = report["tests"]
for name in ("core_cuda_twin_test", "core_cuda_cnn_twin_test", "dist_nccl_communicator_test",
             "resnet_gpu_test", "resnet_cuda_graph_test", "resnet_typed_activations_gpu_test",
             "unet3d_gpu_test",
             "datasets_device_decoder_test"):
    t = tests.get(name)
    if t is None or "error" in t:
        fails.append(f"{name}: {t}")
    elif t["failed"] or not t["skipped"]:
        fails.append(f"{name}: {len(t['failed'])} failed, {len(t['skipped'])} skipped")
# One run_closed stage per registered benchmark (run_closed --list).
registered = os.environ["REGISTERED"].split()
if not registered or set(report["benchmarks"]) != {
        "gpu_ops", "conv_legacy_api", "resnet_step", "bert_step", "unet3d_step", "run_closed",
        "compliance_check", "describe_system", "run_closed_gpu_decode", "run_benchmark_train",
        "run_benchmark_infer", "run_benchmark_comm", "loader",
        "dlrm_step", "llama_layers", "llama2_lora_layers", "retinanet_step", "bert_fp8", "bert_packed"} | {
        f"run_closed_{b}_bf16" for b in registered}:
    fails.append(f"benchmarks: {sorted(report['benchmarks'])}")
elif report["benchmarks"]["run_closed"]["exit"].split()[0] == "0":
    fails.append("run_closed --gpus 1 succeeded without a GPU")
if not report["versions"].get("libcudart.so.13", "").startswith("/"):
    fails.append(f"libcudart not resolved: {report['versions']}")
md = open(os.path.join(out, "gpu_report.md")).read()
if "| resnet_gpu_test |" not in md or "### run_closed" not in md:
    fails.append("the Markdown report lacks a test binary or a benchmark")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
# A spent budget: every stage is skipped and said so, the exit is 1.
out=$(GPU_CHECK_BUDGET=0 PATH=$tmp/fake:$PATH "$tmp/repo/scripts/gpu_check.sh" "$tmp/spent" 2>&1)
code=$?
[[ $code -eq 1 ]] || fail "exit $code with a spent budget: $out"
[[ $out == *"skipped: the time budget (0 s) is spent"* ]] || fail "a spent budget unsaid: $out"
REGISTERED=$("$bin/run_closed" --list) python3 - "$tmp/spent" <<'PY' || exit 1
import json, os, sys
report = json.load(open(os.path.join(sys.argv[1], "gpu_report.json")))
skipped = {n for n, b in report["benchmarks"].items() if b["exit"] == "skipped"}
# Nineteen stages, and one run_closed stage per registered benchmark.
if report["tests"] or len(skipped) != 19 + len(os.environ["REGISTERED"].split()):
    print("FAIL: with a spent budget:", report["tests"], sorted(skipped))
    sys.exit(1)
PY
# Stages left out on request: not run, said so, and listed as left out.
out=$(GPU_CHECK_SKIP='core_cuda_.*|bert_step|gpu_ops|loader' PATH=$tmp/fake:$PATH \
  "$tmp/repo/scripts/gpu_check.sh" "$tmp/some" 2>&1)
[[ $out == *"left out core_cuda_twin_test (GPU_CHECK_SKIP/ONLY)"* ]] || fail "a left-out test unsaid: $out"
[[ $out != *"running core_cuda"* ]] || fail "ran a left-out test: $out"
python3 - "$tmp/some" <<'PY' || exit 1
import json, os, sys
report = json.load(open(os.path.join(sys.argv[1], "gpu_report.json")))
left = {n for n, b in report["benchmarks"].items() if b["exit"].startswith("left out")}
if left != {"bert_step", "gpu_ops", "loader"} or "core_cuda_twin_test" in report["tests"] \
        or "resnet_gpu_test" not in report["tests"]:
    print("FAIL: GPU_CHECK_SKIP:", sorted(left), sorted(report["tests"]))
    sys.exit(1)
PY
# Only the stages asked for.
out=$(GPU_CHECK_ONLY='resnet_gpu_test|run_closed' PATH=$tmp/fake:$PATH \
  "$tmp/repo/scripts/gpu_check.sh" "$tmp/only" 2>&1)
python3 - "$tmp/only" <<'PY' || exit 1
import json, os, sys
report = json.load(open(os.path.join(sys.argv[1], "gpu_report.json")))
ran = {n for n, b in report["benchmarks"].items() if not b["exit"].startswith("left out")}
if ran != {"run_closed"} or sorted(report["tests"]) != ["resnet_gpu_test"]:
    print("FAIL: GPU_CHECK_ONLY:", sorted(ran), sorted(report["tests"]))
    sys.exit(1)
PY
# A binary that died (an exit code, no gtest JSON) is an error in the report.
mkdir "$tmp/work" "$tmp/died"
echo "gpu=Stand-in" >"$tmp/work/versions"
echo "134 2" >"$tmp/work/test_dead_test.exit"
python3 "$root/scripts/gpu_report.py" "$tmp/work" "$tmp/died" || fail "gpu_report.py failed"
grep -q '| dead_test | | | aborted before its gtest report' "$tmp/died/gpu_report.md" ||
  fail "a dead test binary is not reported: $(cat "$tmp/died/gpu_report.md")"
echo "PASS"
