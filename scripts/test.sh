#!/usr/bin/env bash
# Installs what is missing, builds everything, runs the whole test suite.
# usage: scripts/test.sh [ctest args...]   e.g. scripts/test.sh -L checker
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --test
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
# Tests run side by side, each with OpenMP threads for every core: spinning
# threads would take the cores from the other test (two U-Net run_closed at
# once: 142 s spinning, 27 s passive; docs/testing.md).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
ctest --test-dir build -j "$(nproc)" --output-on-failure "$@"
