#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, then
#   1. write the log of a closed-division ResNet-50 run with our MLLOG emitter
#      (a scripted event sequence until the ResNet-50 trainer lands) and check it;
#   2. check the real NVIDIA v3.0 and v5.0 submission packages in ../shared/corpus
#      as whole packages (layout, runs, seeds, system JSON, RCPs, scores);
#   3. audit the published v3.0 time-to-train numbers against the raw logs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target compliance_check resnet_run_fixture

out=out/demo
mkdir -p "$out"
log="$out/resnet_result_0.txt"
rm -f "$log"  # the emitter appends; each demo starts from an empty log
build/bin/resnet_run_fixture "$log"
echo "== compliance_check --ruleset 3.0.0 $log"
build/bin/compliance_check --ruleset 3.0.0 "$log"

corpus=../shared/corpus
if [ ! -d "$corpus" ]; then
  echo "(no $corpus here: skipping the package checks)"
  exit 0
fi
echo
echo "== compliance_check $corpus   (review notes left out here; --json has everything)"
build/bin/compliance_check --csv "$out/summary.csv" "$corpus" | grep -v '^ *review:'
echo "(scores written to $out/summary.csv)"
echo
echo "== compliance_check --claims $corpus/official_time_to_train.csv $corpus/v3.0"
build/bin/compliance_check --claims "$corpus/official_time_to_train.csv" "$corpus/v3.0" |
  grep '^CLAIM'
