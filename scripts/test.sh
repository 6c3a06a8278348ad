#!/usr/bin/env bash
# Installs what is missing, builds everything, runs the whole test suite.
# usage: scripts/test.sh [ctest args...]   e.g. scripts/test.sh -L checker
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --test
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
ctest --test-dir build -j "$(nproc)" --output-on-failure "$@"
