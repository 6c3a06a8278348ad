#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, then
#   1. run_closed on the embedded defaults, into one submission package: five
#      closed-division runs of a small ResNet-50-family model on a generated
#      image set (real JPEG files in the ImageNet layout), the forty runs of
#      a small 3D U-Net on generated KiTS19-like cases (real .nii.gz files), and
#      the ten runs of a small BERT on a generated language (TFRecords in the
#      reference's schema, from a generated TensorFlow checkpoint);
#   2. compliance_check on that package (RCP bypass: no RCP exists for the demos'
#      batch sizes), and the official package checker too when it is installed
#      (it is a test oracle: scripts/install_deps.sh --test installs it).
# Every invocation writes a new package under out/demo/; nothing is overwritten.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target run_closed compliance_check

out="out/demo/$(date +%Y%m%d-%H%M%S)"
for bench in resnet unet3d bert; do
  echo "== run_closed --bench $bench --out $out"
  build/bin/run_closed --bench "$bench" --out "$out" --cache_dir out/demo/cache
done

package="$out/mlperf-suite"
echo
echo "== compliance_check --ruleset 4.0.0 --rcp-bypass $package"
build/bin/compliance_check --ruleset 4.0.0 --rcp-bypass "$package"

if python3 -c 'import mlperf_logging' 2> /dev/null; then
  echo
  echo "== python3 -m mlperf_logging.package_checker $package training 4.0.0 --rcp-bypass"
  python3 -m mlperf_logging.package_checker "$package" training 4.0.0 --rcp-bypass \
    --log_output "$out/package_checker.log" > /dev/null 2>&1 || official=$?
  # Its verdict line (the whole report is in the log file).
  grep -E "PACKAGE CHECKER|ERROR" "$out/package_checker.log" || echo "(no verdict in $out/package_checker.log)"
  exit "${official:-0}"
fi
