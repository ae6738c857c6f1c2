#!/usr/bin/env bash
# Runs every test: C++ (Qt Test) and Python (pytest), all through CTest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# The newest Megatron-core release runs on Python 3.12 in its own environment (tests only).
# Its ~4 GB of wheels download while the packages install and the project builds: the network
# and the compiler overlap. Its output is shown once it ends; this project's own packages go in
# after the set-up (their editable builds write into the source tree, as .venv's do).
py312_log="$(mktemp)"
install_python312_packages >"${py312_log}" 2>&1 &
py312_pid=$!
trap 'kill "${py312_pid}" 2>/dev/null || true; rm -f "${py312_log}"' EXIT
ttrace_setup
py312_status=0
wait "${py312_pid}" || py312_status=$?
cat "${py312_log}" >&2
if ((py312_status != 0)); then
  log "setting up .venv312 failed (exit ${py312_status}); its output is above"
  exit "${py312_status}"
fi
install_python312_project

export QT_QPA_PLATFORM=offscreen
cd "${TTRACE_BUILD}"
# Independent entries run side by side (the Python suites are split into their own entries).
rm -rf pytest-results
ctest --output-on-failure --timeout 1800 -j "$(nproc)" "$@"
# No test may skip unless tests/expected-skips.txt says why (a missing binary or dependency
# would otherwise pass as a skip). With no filter given, every pytest entry must have run.
entries=()
if (($# == 0)); then
  mapfile -t entries < <(ctest -N -V | sed -n 's/.*--junitxml=.*\/\([^/]*\)\.xml.*/\1/p' | sort -u)
fi
"${TTRACE_PY}" "${TTRACE_ROOT}/scripts/check_skips.py" pytest-results \
  "${TTRACE_ROOT}/tests/expected-skips.txt" "${entries[@]}"

# Then the C++ tests again under AddressSanitizer + UndefinedBehaviorSanitizer, and a short run
# of every libFuzzer target (the asan presets in CMakePresets.json; scripts/fuzz.sh runs them
# longer). TTRACE_SKIP_SANITIZERS=1 leaves this out for a quick local run.
if [[ "${TTRACE_SKIP_SANITIZERS:-0}" != 1 ]]; then
  cd "${TTRACE_ROOT}"
  if [[ ! -f build-asan/build.ninja ]]; then
    log "configuring build-asan (clang, ASan + UBSan)"
    cmake --preset asan -DTTRACE_PYTHON="${TTRACE_PY}" >/dev/null
  fi
  log "building build-asan"
  build_quietly --preset asan --
  ctest --preset asan --timeout 1800 -j "$(nproc)" "$@"
fi
