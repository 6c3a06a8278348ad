#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, then
#   1. run_closed on the embedded default of every registered benchmark
#      (run_closed --list): small members of each family on generated data
#      sets in the real formats (JPEG files in the ImageNet layout, KiTS19-like
#      .nii.gz cases, TFRecords and a TensorFlow checkpoint, Criteo day files,
#      Megatron token files);
#   2. compliance_check on each package (RCP bypass: no RCP exists for the
#      demos' batch sizes), and the official package checker too when it is
#      installed (it is a test oracle: scripts/install_deps.sh --test installs it).
# A package follows one round's rules. Each benchmark goes into the package
# of DEMO_RULESET (4.0.0 by default, the last round that accepted ResNet-50,
# 3D U-Net, BERT and DLRM-dcnv2 together) when that round accepted it, else
# into the package of DEMO_NEWER_RULESET (6.1.0 by default: Llama 3.1 8B),
# else of DEMO_MIDDLE_RULESET (5.1.0 by default: RetinaNet, which no round
# after 5.1 runs).
# Every invocation writes new packages under out/demo/; nothing is overwritten.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target run_closed compliance_check

rulesets=("${DEMO_RULESET:-4.0.0}" "${DEMO_NEWER_RULESET:-6.1.0}" "${DEMO_MIDDLE_RULESET:-5.1.0}")
out="out/demo/$(date +%Y%m%d-%H%M%S)"
for bench in $(build/bin/run_closed --list); do
  done_bench=""
  for ruleset in "${rulesets[@]}"; do
    echo "== run_closed --bench $bench --ruleset $ruleset --out $out/$ruleset"
    if build/bin/run_closed --bench "$bench" --ruleset "$ruleset" --out "$out/$ruleset" \
      --cache_dir out/demo/cache; then
      done_bench=1
      break
    else
      code=$?
      # A benchmark the round did not accept is refused at once (exit 2).
      [[ $code -eq 2 ]] || exit "$code"
    fi
  done
  [[ -n $done_bench ]] || echo "(left out: refused under ${rulesets[*]}, as the lines above say)"
done

official=0
for ruleset in "${rulesets[@]}"; do
  package="$out/$ruleset/mlperf-suite"
  [[ -d $package ]] || continue
  echo
  echo "== compliance_check --ruleset $ruleset --rcp-bypass $package"
  build/bin/compliance_check --ruleset "$ruleset" --rcp-bypass "$package"
  if python3 -c 'import mlperf_logging' 2> /dev/null; then
    echo
    echo "== python3 -m mlperf_logging.package_checker $package training $ruleset --rcp-bypass"
    python3 -m mlperf_logging.package_checker "$package" training "$ruleset" --rcp-bypass \
      --log_output "$out/$ruleset/package_checker.log" > /dev/null 2>&1 || official=$?
    # Its verdict line (the whole report is in the log file).
    grep -E "PACKAGE CHECKER|ERROR" "$out/$ruleset/package_checker.log" ||
      echo "(no verdict in $out/$ruleset/package_checker.log)"
  fi
done
exit "$official"
