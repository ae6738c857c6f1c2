#!/usr/bin/env bash
# Long fuzz runs: builds the asan preset (clang, ASan + UBSan, libFuzzer targets), writes the
# seed corpora and runs each target for a while, one after the other.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# The growing corpus lives outside the repository (TTRACE_FUZZ_CORPUS, default
# ~/.cache/ttrace-fuzz); crash inputs land in its artifacts/ folder. A crash stops the run
# with libFuzzer's exit code; add the input to tests/fuzz/regressions/<target>/ once fixed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_PER_TARGET="${1:-600}"
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(fuzz_manifest fuzz_placement fuzz_rank_file fuzz_rank_attributes)
CORPUS="${TTRACE_FUZZ_CORPUS:-${XDG_CACHE_HOME:-$HOME/.cache}/ttrace-fuzz}"
BUILD="${ROOT}/build-asan"

cd "${ROOT}"
[[ -f "${BUILD}/build.ninja" ]] || cmake --preset asan >/dev/null
cmake --build "${BUILD}" --target "${TARGETS[@]}"
PYTHON="$(sed -n 's/^TTRACE_PYTHON:FILEPATH=//p' "${BUILD}/CMakeCache.txt")"
SEEDS="${BUILD}/tests/fuzz/seeds"
PYTHONPATH="${ROOT}/python" PYTHONDONTWRITEBYTECODE=1 "${PYTHON}" tests/fuzz/make_seeds.py "${SEEDS}"

export LSAN_OPTIONS="suppressions=${ROOT}/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
mkdir -p "${CORPUS}/artifacts"
for target in "${TARGETS[@]}"; do
  mkdir -p "${CORPUS}/${target}"
  echo "== ${target}: ${SECONDS_PER_TARGET} s, corpus ${CORPUS}/${target}"
  "${BUILD}/tests/fuzz/bin/${target}" -max_total_time="${SECONDS_PER_TARGET}" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="${CORPUS}/artifacts/${target}-" \
    "${CORPUS}/${target}" "${SEEDS}/${target}" "tests/fuzz/regressions/${target}"
done
