#!/usr/bin/env bash
# Runs every test: C++ (Qt Test) and Python (pytest), all through CTest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ttrace_setup

export QT_QPA_PLATFORM=offscreen
cd "${TTRACE_BUILD}"
# Independent entries run side by side (the Python suites are split into their own entries).
ctest --output-on-failure --timeout 1800 -j "$(nproc)" "$@"
