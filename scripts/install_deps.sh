#!/usr/bin/env bash
# Installs what the build and the tests need, and nothing that is already there.
# Idempotent: a second run only checks. Debian packages through apt-get, the
# official MLPerf tools (our test oracle) through pip at a pinned version.
set -euo pipefail

MLPERF_LOGGING_VERSION=4.1.59

debs=(
  build-essential cmake ninja-build pkg-config
  libabsl-dev         # flags, Status/StatusOr, strings
  libfmt-dev          # formatting (GCC 12 has no <format>)
  libgtest-dev libgmock-dev
  libprotobuf-dev protobuf-compiler  # TFRecord tf.Example records
  libopenblas-dev     # CPU GEMM for the training core
  libopenmpi-dev openmpi-bin         # multi-process CPU runs and NCCL bootstrap
  libjpeg62-turbo-dev # ImageNet JPEG decoding
  python3-pip
  python3-torch       # the PyTorch parity oracle (CPU, runs under /usr/bin/python3)
  python3-torchvision # torchvision's resnet50: the ResNet parity oracle and speed peer
)

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

have=$(python3 -c 'import importlib.metadata as m; print(m.version("mlperf-logging"))' 2>/dev/null || true)
if [ "$have" != "$MLPERF_LOGGING_VERSION" ]; then
  echo "install_deps: pip install mlperf-logging==$MLPERF_LOGGING_VERSION"
  python3 -m pip install -q --disable-pip-version-check "mlperf-logging==$MLPERF_LOGGING_VERSION" ||
    python3 -m pip install -q --disable-pip-version-check --break-system-packages \
      "mlperf-logging==$MLPERF_LOGGING_VERSION"
fi
