#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, then check
# MLPerf result logs with compliance_check:
#   * a closed-division ResNet-50 log written by our MLLOG emitter (a scripted
#     event sequence until the ResNet-50 trainer lands; see README);
#   * the real NVIDIA v3.0 and v5.0 logs in ../shared/corpus, when present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target compliance_check resnet_run_fixture

out=out/demo
mkdir -p "$out"
log="$out/resnet_result_0.txt"
rm -f "$log"  # the emitter appends; a fresh demo starts from an empty log
build/bin/resnet_run_fixture "$log"
echo "== compliance_check --ruleset 3.0.0 $log"
build/bin/compliance_check --ruleset 3.0.0 "$log"

corpus=../shared/corpus
if [ -d "$corpus/v3.0" ]; then
  echo "== compliance_check --ruleset 3.0.0 on the v3.0 corpus"
  build/bin/compliance_check --ruleset 3.0.0 "$corpus"/v3.0/*/results/*/*/result_*.txt | tail -n 3
fi
if [ -d "$corpus/v5.0" ]; then
  echo "== compliance_check --ruleset 5.0.0 on the v5.0 corpus"
  build/bin/compliance_check --ruleset 5.0.0 "$corpus"/v5.0/*/results/*/*/result_*.txt | tail -n 3
fi
