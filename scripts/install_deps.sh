#!/usr/bin/env bash
# Installs what the build needs, and nothing that is already there; with
# --test also the test-only oracles (PyTorch and torchvision for parity and
# speed, the official MLPerf tools through pip at a pinned version), which the
# main job (scripts/demo.sh) does not need; with --fuzz the compiler of the
# opt-in fuzzing build (docs/FUZZING.md). Idempotent: a second run only checks.
# usage: scripts/install_deps.sh [--test] [--fuzz]
set -euo pipefail
with_oracles=0
with_fuzz=0
for arg in "$@"; do
  case "$arg" in
    --test) with_oracles=1 ;;
    --fuzz) with_fuzz=1 ;;
    *) echo "install_deps: unknown argument '$arg' (usage: install_deps.sh [--test] [--fuzz])" >&2; exit 2 ;;
  esac
done

# The official release the tools match (also what --version prints).
MLPERF_LOGGING_VERSION=$(cat "$(dirname "$0")/../quality_targets/official_release.txt")

debs=(
  build-essential cmake ninja-build pkg-config
  libabsl-dev         # flags, Status/StatusOr, strings
  libfmt-dev          # formatting (GCC 12 has no <format>)
  libgtest-dev libgmock-dev
  libprotobuf-dev protobuf-compiler  # TFRecord tf.Example records
  libopenblas-dev     # CPU GEMM for the training core
  libopenmpi-dev openmpi-bin         # multi-process CPU runs and NCCL bootstrap
  libjpeg62-turbo-dev # ImageNet JPEG decoding
  libpng-dev          # the PNGs ImageNet keeps under .JPEG names
  zlib1g-dev          # KiTS19's .nii.gz volumes
  libsqlite3-dev      # results_db's default warehouse, one file
  libpq-dev           # results_db --db postgresql://... (libpq, PostgreSQL's own client)
  libssl-dev          # SHA-256 of every ingested file (OpenSSL's libcrypto)
  python3             # CMake registers the Python-driven tests at configure time
)
# nvJPEG for the GPU data path (datasets/cuda) where the CUDA toolkit lacks it:
# NVIDIA's PyPI wheel, the release series of CUDA 13.0.
NVJPEG_VERSION=13.0.1.86
cuda=/usr/local/cuda
with_nvjpeg=0
if [ -x $cuda/bin/nvcc ] && [ ! -f $cuda/include/nvjpeg.h ]; then
  with_nvjpeg=1
  debs+=(python3-pip)
fi

if ((with_oracles)); then
  debs+=(
    python3-pip
    python3-torch       # the PyTorch parity oracle (CPU, runs under /usr/bin/python3)
    python3-torchvision # torchvision's resnet50: the ResNet parity oracle and speed peer
    python3-numpy       # recomputes run_benchmark's statistics in its tests
    python3-scipy       # scipy.ndimage.label: the 3D U-Net crop's connected components
    python3-nibabel     # a second NIfTI reader and writer for the KiTS19 tests
    python3-sklearn     # roc_auc_score: the oracle of DLRM's exact AUC
    python3-psutil      # imported by accelerate, which peft (the LoRA oracle) imports
    chromium fonts-dejavu-core  # renders compliance_check --html in the browser test
    postgresql          # a throw-away server for results_db's PostgreSQL test
    slurmctld slurmd slurm-client  # srun and sbatch across the namespace nodes (multinode_slurm)
  )
fi

if ((with_fuzz)); then
  # clang 16: libFuzzer with ASan/UBSan, and std::source_location with GCC 12's
  # library (clang 14 lacks it); OpenMP for the instrumented training core.
  debs+=(clang-16 libclang-rt-16-dev libomp-16-dev)
fi

missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: apt-get install ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# pip_pinned PYTHON PACKAGE VERSION [WHY]: installs PACKAGE==VERSION for PYTHON
# unless that version is there (with --break-system-packages where Debian
# marks the system Python as externally managed). PIP_EXTRA: more pip flags.
pip_pinned() {
  local python=$1 package=$2 version=$3 why=${4:-}
  local have
  have=$("$python" -c "import importlib.metadata as m; print(m.version('$package'))" 2>/dev/null || true)
  [ "$have" = "$version" ] && return 0
  echo "install_deps: pip install $package==$version${why:+ ($why)}"
  # shellcheck disable=SC2086
  "$python" -m pip install -q --disable-pip-version-check ${PIP_EXTRA:-} "$package==$version" ||
    "$python" -m pip install -q --disable-pip-version-check --break-system-packages \
      ${PIP_EXTRA:-} "$package==$version"
}

((with_nvjpeg)) && pip_pinned python3 nvidia-nvjpeg "$NVJPEG_VERSION" "nvJPEG for the GPU data path"

((with_oracles)) || exit 0
pip_pinned python3 mlperf-logging "$MLPERF_LOGGING_VERSION"

# transformers' BertForPreTraining, the BERT parity oracle, for Debian's
# PyTorch 1.13 under /usr/bin/python3 (4.40.2 is a release that runs on it).
pip_pinned /usr/bin/python3 transformers 4.40.2 "for /usr/bin/python3"
# Zarr, the format of the GPT-3 reference's checkpoint: the oracle that
# writes the arrays reference/io/zarr reads (numcodecs pinned to a release
# that runs with Debian's typing_extensions, installed first).
pip_pinned /usr/bin/python3 numcodecs 0.12.1 "for /usr/bin/python3"
pip_pinned /usr/bin/python3 zarr 2.18.2 "for /usr/bin/python3"
# peft, the field's LoRA, and the accelerate it imports: the oracle of the
# decoder's adapters (releases that run on PyTorch 1.13 and transformers 4.40).
# Without their dependencies: pip does not count Debian's PyTorch and would
# pull a new one; the rest (psutil from Debian above; PyYAML, safetensors,
# huggingface_hub with transformers) is there.
PIP_EXTRA=--no-deps pip_pinned /usr/bin/python3 accelerate 0.29.3 "for /usr/bin/python3"
PIP_EXTRA=--no-deps pip_pinned /usr/bin/python3 peft 0.10.0 "for /usr/bin/python3"
# pyarrow: the Parquet reader of scripts/convert_govreport.py (the LoRA
# benchmark's data ships as Parquet; no Parquet library is packaged for the
# C++ build), and the writer of its tests' Parquet files (a release that
# runs with Debian's NumPy 1.24).
pip_pinned /usr/bin/python3 pyarrow 17.0.0 "for /usr/bin/python3"
# pycocotools: COCOeval, the oracle of the COCO box mAP and its speed peer
# (Debian packages none). Without its dependencies: matplotlib is only for
# drawing, and NumPy is Debian's.
PIP_EXTRA=--no-deps pip_pinned /usr/bin/python3 pycocotools 2.0.8 "for /usr/bin/python3"
# ml_dtypes: the field's float8_e4m3fn / float8_e5m2, the oracle of the FP8
# conversions (Debian packages none; NumPy is Debian's).
PIP_EXTRA=--no-deps pip_pinned /usr/bin/python3 ml_dtypes 0.4.1 "for /usr/bin/python3"
