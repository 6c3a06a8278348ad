#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, then
#   1. run_closed on the embedded default of every registered benchmark
#      (run_closed --list) that round DEMO_RULESET accepted, into one
#      submission package: small members of each family on generated data
#      sets in the real formats (JPEG files in the ImageNet layout, KiTS19-like
#      .nii.gz cases, TFRecords and a TensorFlow checkpoint, Criteo day files);
#   2. compliance_check on that package (RCP bypass: no RCP exists for the demos'
#      batch sizes), and the official package checker too when it is installed
#      (it is a test oracle: scripts/install_deps.sh --test installs it).
# A package follows one round's rules: DEMO_RULESET, 4.0.0 by default, the
# last round that accepted ResNet-50, 3D U-Net, BERT and DLRM-dcnv2 together.
# Every invocation writes a new package under out/demo/; nothing is overwritten.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target run_closed compliance_check

ruleset=${DEMO_RULESET:-4.0.0}
out="out/demo/$(date +%Y%m%d-%H%M%S)"
for bench in $(build/bin/run_closed --list); do
  echo "== run_closed --bench $bench --ruleset $ruleset --out $out"
  build/bin/run_closed --bench "$bench" --ruleset "$ruleset" --out "$out" \
    --cache_dir out/demo/cache || {
    code=$?
    # A benchmark the round did not accept is refused at once (exit 2).
    [[ $code -eq 2 ]] && { echo "(left out: refused, as the line above says)"; continue; }
    exit "$code"
  }
done

package="$out/mlperf-suite"
echo
echo "== compliance_check --ruleset $ruleset --rcp-bypass $package"
build/bin/compliance_check --ruleset "$ruleset" --rcp-bypass "$package"

if python3 -c 'import mlperf_logging' 2> /dev/null; then
  echo
  echo "== python3 -m mlperf_logging.package_checker $package training $ruleset --rcp-bypass"
  python3 -m mlperf_logging.package_checker "$package" training "$ruleset" --rcp-bypass \
    --log_output "$out/package_checker.log" > /dev/null 2>&1 || official=$?
  # Its verdict line (the whole report is in the log file).
  grep -E "PACKAGE CHECKER|ERROR" "$out/package_checker.log" || echo "(no verdict in $out/package_checker.log)"
  exit "${official:-0}"
fi
