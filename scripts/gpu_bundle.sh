#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh needs on a bare GPU machine into
# .gpu_bundle/ (git-ignored; carry it with the working tree): the GPU test
# binaries, the GPU benchmarks, run_closed, run_benchmark,
# compliance_check and describe_system, built here with CUDA, and the shared libraries they use
# that such a machine lacks (Abseil, fmt, Protobuf, OpenBLAS, libjpeg, ...),
# xz-compressed. The CUDA libraries (cudart, cuBLAS, cuDNN, NCCL) are not
# packed: gpu_check.sh takes the GPU machine's own, of the same major version.
#
# usage: scripts/gpu_bundle.sh [BUILD_DIR]   (default build; it is built first)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=.gpu_bundle
die() { echo "gpu_bundle: $*" >&2; exit 2; }

[[ -f $build/CMakeCache.txt ]] || die "$build is not a CMake build folder (run scripts/test.sh or cmake first)"
cmake --build "$build" -j "$(nproc)" >/dev/null
nvcc=$(sed -n 's/^set(CMAKE_CUDA_COMPILER "\(.*\)")$/\1/p' "$build"/CMakeFiles/*/CMakeCUDACompiler.cmake 2>/dev/null | head -1)
[[ -n $nvcc ]] || die "$build was configured without CUDA; the bundle needs the CUDA parts (/usr/local/cuda)"

# The executables of the gpu-labelled tests, as ctest knows them.
mapfile -t tests < <(ctest --test-dir "$build" -L gpu --show-only=json-v1 |
  python3 -c 'import json, sys; print("\n".join(sorted({t["command"][0] for t in json.load(sys.stdin)["tests"]})))')
[[ ${#tests[@]} -gt 0 ]] || die "no gpu-labelled tests in $build"
tools=()
for name in gpu_ops_bench resnet_gpu_bench bert_gpu_bench unet3d_gpu_bench dlrm_bench llama_gpu_bench \
  retinanet_step_bench datasets_loader_bench \
  run_closed run_benchmark compliance_check describe_system; do
  [[ -x $build/bin/$name ]] || die "$build/bin/$name is missing"
  tools+=("$build/bin/$name")
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp "${tests[@]}" "${tools[@]}" "$stage/bin/"
for t in "${tests[@]}"; do basename "$t"; done >"$stage/tests.txt"
# Every resolved dependency except the C library's own and the CUDA family.
for f in "$stage"/bin/*; do ldd "$f"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64)\.so' |
  grep -v -E '/lib(cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|cuda)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/$(basename "$lib")"; done
{
  echo "built $(date -u +%FT%TZ) on $(uname -n) from $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')"
  echo "nvcc: $("$nvcc" --version | tail -1)"
  echo "cuda libraries expected on the GPU machine:"
  for f in "$stage"/bin/*; do ldd "$f"; done | awk '{print $1}' |
    grep -E '^lib(cudart|cublas|cublasLt|cudnn|nccl)\.so' | sort -u | sed 's/^/  /'
} >"$stage/MANIFEST"
rm -rf "$out"
mkdir -p "$out"
tar -C "$stage" -cJf "$out/bundle.tar.xz" .
echo "gpu_bundle: $out/bundle.tar.xz ($(du -h "$out/bundle.tar.xz" | cut -f1)): ${#tests[@]} test binaries, ${#tools[@]} tools, $(ls "$stage/lib" | wc -l) libraries"
