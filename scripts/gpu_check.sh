#!/usr/bin/env bash
# Verifies the GPU side on a bare GPU machine in one go (within a budget, 9
# minutes by default): every gpu-labelled test, the ResNet-50, BERT-Large and
# 3D U-Net training steps against PyTorch (ResNet-50 in fp32, bf16 and fp16,
# BERT in fp32 and bf16, each also as a recorded CUDA graph; the U-Net in
# bf16 and fp32), the GPU op benchmarks against PyTorch on the same GPU
# (and the bf16 convolutions through cuDNN's legacy API, in a process of
# their own), the embedded run_closed on the GPU (fp32 through
# compliance_check, one bf16 run with recorded steps, one with the images
# decoded on the GPU), run_benchmark on the GPU (training and inference),
# and the input pipeline on the machine's cores and with decoding on the
# GPU; one report, OUT_DIR/gpu_report.md
# and .json (GPU, driver, CUDA/cuDNN/NCCL versions, every test's result, every
# figure with its peer), with the full output in OUT_DIR/gpu_check.log.
#
# The binaries come from .gpu_bundle/ (scripts/gpu_bundle.sh, run on a build
# machine with CUDA; carry the folder) or, failing that, from build/bin. The
# CUDA libraries are the GPU machine's own: /usr/local/cuda, then PyTorch's
# nvidia-* wheels. Without a GPU it says so in one line and exits 0.
#
# GPU_CHECK_SKIP and GPU_CHECK_ONLY, extended regular expressions over the
# test binaries' and benchmarks' names, leave stages out: those SKIP
# matches, and those ONLY does not (say, to split the check in two calls, or
# to leave out what an earlier check of the same build passed, when device
# time is short); the report lists them as left out.
#
# usage: [GPU_CHECK_BUDGET=seconds] [GPU_TEST_LIMIT=seconds] [GPU_CHECK_SKIP=regex]
#        [GPU_CHECK_ONLY=regex] scripts/gpu_check.sh OUT_DIR
# exit: 0 checked (the report says what passed) or no GPU; 1 a test failed
#       or was skipped for time; 2 usage error or nothing to run.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[[ $# -eq 1 ]] || { echo "usage: scripts/gpu_check.sh OUT_DIR" >&2; exit 2; }
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "gpu_check: no NVIDIA GPU on this machine; nothing to do"
  exit 0
fi
out=$1
mkdir -p "$out" || { echo "gpu_check: cannot create $out" >&2; exit 2; }
out=$(cd "$out" && pwd)
log=$out/gpu_check.log
: >"$log"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { echo "gpu_check: $*" | tee -a "$log"; }

# Binaries and their non-CUDA libraries.
if [[ -f .gpu_bundle/bundle.tar.xz ]]; then
  tar -C "$work" -xJf .gpu_bundle/bundle.tar.xz || { say "cannot unpack .gpu_bundle/bundle.tar.xz"; exit 2; }
  bin=$work/bin
  libs=$work/lib
  mapfile -t tests <"$work/tests.txt"
  say "binaries from .gpu_bundle: $(head -1 "$work/MANIFEST")"
elif [[ -x build/bin/core_cuda_twin_test ]] && command -v ctest >/dev/null; then
  bin=$root/build/bin
  libs=
  mapfile -t tests < <(ctest --test-dir build -L gpu --show-only=json-v1 |
    python3 -c 'import json, os, sys; print("\n".join(sorted({os.path.basename(t["command"][0]) for t in json.load(sys.stdin)["tests"]})))')
  say "binaries from build/bin (no .gpu_bundle)"
else
  say "no binaries: run scripts/gpu_bundle.sh on a machine with the build dependencies and CUDA, and carry .gpu_bundle"
  exit 2
fi

# The CUDA family from this machine: the toolkit, then PyTorch's wheels.
dirs=(/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib)
py=$(command -v python3 || true)
if [[ -n $py ]]; then
  mapfile -t wheel_dirs < <("$py" -c 'import glob, os, nvidia; [print(d) for p in nvidia.__path__ for d in sorted(glob.glob(os.path.join(p, "*", "lib")))]' 2>/dev/null)
  dirs+=("${wheel_dirs[@]}")
fi
ld=${libs}
declare -A found=()
for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
  for d in "${dirs[@]}"; do
    if [[ -e $d/$so ]]; then
      found[$so]=$(readlink -f "$d/$so")
      [[ :$ld: == *:$d:* ]] || ld=$ld:$d
      break
    fi
  done
  [[ -n ${found[$so]:-} ]] || say "missing on this machine: $so (searched ${dirs[*]})"
done
export LD_LIBRARY_PATH=${ld#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unresolved() {
  : >"$work/unresolved"
  for f in "$bin"/*; do
    ldd "$f" 2>&1 | grep 'not found' | sed "s|^|  $(basename "$f"): |" >>"$work/unresolved"
  done
  [[ -s $work/unresolved ]]
}
# Where this machine has a bundled library itself (libstdc++, libgomp, zlib,
# ...), its own copy serves the CUDA libraries too, unless ours need newer
# symbols than it has.
if [[ -n $libs ]]; then
  mkdir -p "$work/shadowed"
  for f in "$libs"/*; do
    ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$(basename "$f") " && mv "$f" "$work/shadowed/"
  done
  if unresolved; then mv "$work"/shadowed/* "$libs/" 2>/dev/null; fi
fi
if unresolved; then
  say "unresolved libraries:"
  tee -a "$log" <"$work/unresolved"
fi

# Versions: each library asked through its own API.
lib_version() {  # soname path
  [[ -n $py ]] || return 0
  "$py" - "$1" "$2" 2>/dev/null <<'PY'
import ctypes, sys
name, path = sys.argv[1:]
lib, v = ctypes.CDLL(path), ctypes.c_int()
if name.startswith("libcudart"):
    lib.cudaRuntimeGetVersion(ctypes.byref(v)); print(f"runtime {v.value // 1000}.{v.value % 1000 // 10}")
elif name.startswith("libcudnn"):
    lib.cudnnGetVersion.restype = ctypes.c_size_t; print(f"cuDNN {lib.cudnnGetVersion()}")
elif name.startswith("libnccl"):
    lib.ncclGetVersion(ctypes.byref(v)); print(f"NCCL {v.value}")
elif name.startswith("libcublas.so"):
    lib.cublasGetVersion_v2(None, ctypes.byref(v)); print(f"cuBLAS {v.value}")
PY
}
{
  echo "gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1)"
  echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  for so in "${!found[@]}"; do echo "$so=${found[$so]} $(lib_version "$so" "${found[$so]}")"; done
  echo "nvcc=$(command -v nvcc >/dev/null && nvcc --version | tail -1)"
  echo "torch=$([[ -n $py ]] && "$py" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())' 2>/dev/null)"
} >"$work/versions"
cat "$work/versions" >>"$log"

# The report is rewritten after every stage, so that a run cut off at the
# machine's time limit still leaves what it measured.
report() {
  "${py:-python3}" scripts/gpu_report.py "$work" "$out" || { say "the report could not be written"; exit 2; }
}

# A budget for the whole check (GPU_CHECK_BUDGET seconds, default 540, so
# that a 10-minute slot also covers the start): every stage gets at most its
# own limit and what is left, and a stage with under 20 s left is recorded as
# skipped. Stages run in the order of what they tell: the tests, the ResNet
# step, the ops, the closed runs, then the rest.
budget=${GPU_CHECK_BUDGET:-540}
[[ $budget =~ ^[0-9]+$ ]] || { say "GPU_CHECK_BUDGET=$budget: expected seconds"; exit 2; }
deadline=$((SECONDS + budget))
limit_for() {  # stage limit -> seconds to give it (0: skip)
  local left=$((deadline - SECONDS - 5))
  ((left < 20)) && { echo 0; return; }
  echo $(($1 < left ? $1 : left))
}

# Tests: every gpu test binary, the kernel twins first (everything else
# builds on them), each under GPU_TEST_LIMIT seconds (default 240), with
# cuDNN's algorithm choices in the log; gtest writes one JSON each, and a
# binary that dies before it is reported with its exit code.
status=0
[[ ${#tests[@]} -gt 0 ]] || { say "no gpu test binaries listed"; exit 2; }
test_limit=${GPU_TEST_LIMIT:-240}
[[ $test_limit =~ ^[0-9]+$ ]] || { say "GPU_TEST_LIMIT=$test_limit: expected seconds"; exit 2; }
mapfile -t tests < <(printf '%s\n' "${tests[@]}" | grep '^core_'; printf '%s\n' "${tests[@]}" | grep -v '^core_')
skip=${GPU_CHECK_SKIP:-}
only=${GPU_CHECK_ONLY:-}
skipped() { [[ (-n $skip && $1 =~ ^($skip)$) || (-n $only && ! $1 =~ ^($only)$) ]]; }
for t in "${tests[@]}"; do
  if skipped "$t"; then
    say "left out $t (GPU_CHECK_SKIP/ONLY)"
    continue
  fi
  [[ -x $bin/$t ]] || { say "test binary $t is missing"; status=1; continue; }
  limit=$(limit_for "$test_limit")
  if ((limit == 0)); then
    say "skipped $t: the time budget ($budget s) is spent"
    status=1
    continue
  fi
  say "running $t"
  started=$SECONDS
  MLPERF_CUDNN_LOG=1 timeout "$limit" "$bin/$t" --gtest_output="json:$work/test_$t.json" \
    >>"$log" 2>&1
  code=$?
  ((code == 0)) || status=1
  echo "$code $((SECONDS - started))" >"$work/test_$t.exit"
  report
done

# Benchmarks, each under its own time limit; their output goes to the report.
export MLPERF_SOURCE_DIR=$root MLPERF_PYTHON=${py:-python3}
bench() {  # name seconds command...
  local name=$1 limit
  limit=$(limit_for "$2")
  shift 2
  if skipped "$name"; then
    say "left out benchmark $name (GPU_CHECK_SKIP/ONLY)"
    echo "exit=left out (GPU_CHECK_SKIP/ONLY)" >"$work/bench_$name.txt"
    report
    return
  fi
  if ((limit == 0)); then
    say "benchmark $name skipped: the time budget ($budget s) is spent"
    echo "exit=skipped" >"$work/bench_$name.txt"
    report
    return
  fi
  say "benchmark $name"
  local started=$SECONDS code
  timeout "$limit" "$@" >"$work/bench_$name.txt" 2>&1
  code=$?
  echo "exit=$code after $((SECONDS - started)) s of $limit" >>"$work/bench_$name.txt"
  cat "$work/bench_$name.txt" >>"$log"
  report
}
bench resnet_step 300 "$bin/resnet_gpu_bench" 256 10 auto bf16,fp32,fp16
bench gpu_ops 120 "$MLPERF_PYTHON" bench/gpu/torch_peer.py --ours "$bin/gpu_ops_bench" --repeats 10
bench conv_legacy_api 60 "$bin/gpu_ops_bench" --legacy --repeats 10
bench run_closed 120 "$bin/run_closed" --gpus 1 --out "$work/pkg"
bench compliance_check 30 "$bin/compliance_check" --ruleset 4.0.0 --rcp-bypass "$work/pkg/mlperf-suite"
# The GPU machine's own description, valid for the newest ruleset (exit 0),
# with the fields it cannot detect on stderr, then the official checker on it.
bench describe_system 20 bash -c '"$1/describe_system" --gpus "$(nvidia-smi -L | wc -l)" \
  -o "$2/system.json" && cat "$2/system.json" &&
  { "$3" -m mlperf_logging.system_desc_checker --log_output "$2/sdc.log" "$2/system.json" training 6.1.0 || true; }' \
  _ "$bin" "$work" "$MLPERF_PYTHON"
# RetinaNet's step at the reference's widths, 800 x 800, 8 images (the RCP
# batch of 256 over 32 GPUs) in bf16, against torchvision under AMP.
bench retinanet_step 240 "$bin/retinanet_step_bench" 800 8 5 --cuda
# The GPU data path end to end: nvJPEG and the device resample feed training.
bench run_closed_gpu_decode 60 "$bin/run_closed" --gpus 1 --runs 1 --precision bf16 --gpu_decode \
  --out "$work/pkg_gpu_decode"
# Every registered benchmark end to end on the GPU in bf16 (activations
# stored in bf16), its steps recorded.
for name in $("$bin/run_closed" --list); do
  bench "run_closed_${name}_bf16" 60 "$bin/run_closed" --bench "$name" --gpus 1 --runs 1 \
    --precision bf16 --cuda_graph --out "$work/pkg_${name}"
done
# The throughput tool on the GPU: training (recorded steps) and inference
# with its latency percentiles (each batch norm in its convolution's
# epilogue).
bench run_benchmark_train 90 "$bin/run_benchmark" --device gpu --mode train -b 128 \
  --dtype bf16,fp32 --cuda_graph -w 5 -i 10 -r 3 --json "$work/train.json"
bench run_benchmark_infer 90 "$bin/run_benchmark" --device gpu --mode infer -b 1,32,256 \
  --dtype bf16 -w 5 -i 20 -r 3 --json "$work/infer.json"
# NCCL's collectives on the device (one process: every call through NCCL,
# every result checked; busbw is 0 with one rank).
bench run_benchmark_comm 60 "$bin/run_benchmark" --comm --device gpu --maxbytes 256M \
  --stepfactor 4 --json "$work/comm.json"
# The input pipeline on this machine's cores, and with decoding on the GPU
# (nvJPEG): whether it can feed the GPU.
bench loader 90 "$bin/datasets_loader_bench" --batches 80 --dir "$work/loader" --device
bench bert_step 120 "$bin/bert_gpu_bench" 8 5 fp32,bf16
# Packed rows at NVIDIA's per-GPU batch of 48 (two sequences a row): issue
# 51's packed sequences/s (goal 998 on an H200, 970 on an H100).
bench bert_packed 120 "$bin/bert_gpu_bench" 48 5 bf16 packed
# FP8 against bf16 on the same GPU (issue 51): BERT-Large's training step at
# NVIDIA's per-GPU batch of 48 rows, its encoder layers' linear layers on
# cuBLASLt's FP8 kernels, recorded, on synthetic data.
bench bert_fp8 150 "$bin/run_benchmark" --device gpu --bench bert --size full --synthetic \
  --mode train -b 48 --dtype bf16,fp8 --cuda_graph -w 3 -i 10 -r 3 --json "$work/bert_fp8.json"
# Llama 3.1 8B layers at sequence 8192 against PyTorch's SDPA: tokens/s and
# model-FLOPs utilisation (issue 45's goal: 1.2x PyTorch, 40% MFU).
bench llama_layers 150 "$bin/llama_gpu_bench" 4 8192 5 bf16,fp32
# Llama 2 70B-shaped layers fine-tuned with LoRA at sequence 8192 in bf16
# against the same step in PyTorch with SDPA (issue 46).
bench llama2_lora_layers 150 "$bin/llama_gpu_bench" 2 8192 5 bf16 lora
# bf16 only: fp32 NCDHW's profile alone outlasts the limit (run 4), and the
# PyTorch peer comes after it.
bench unet3d_step 240 "$bin/unet3d_gpu_bench" 7 5 auto 128,192,192 bf16
# DLRM-dcnv2's reference-width step (tables capped at 2 million rows) against
# the PyTorch transcription on the same GPU.
bench dlrm_step 120 "$bin/dlrm_bench" step 2000000 8192 5 --cuda
say "report: $out/gpu_report.md"
exit "$status"
