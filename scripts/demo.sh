#!/usr/bin/env bash
# The demo: capture a single-device reference and a 4-rank TP2xDP2 candidate of the example
# GPT with an injected silent bug, compare them, and open the explorer on them (or, with no
# display, print the report and save a screenshot of the explorer).
#
#   ./scripts/demo.sh                 # default bug: sp-norm-grad-not-reduced
#   TTRACE_DEMO_BUG=none ./scripts/demo.sh      # a correct candidate: the diff is clean
#   TTRACE_DEMO_BUG=vocab-ce-missing-allreduce ./scripts/demo.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ttrace_setup

DEMO="${TTRACE_BUILD}/demo"
BUG="${TTRACE_DEMO_BUG:-sp-norm-grad-not-reduced}"
TTRACE="${TTRACE_BUILD}/bin/ttrace"
EXPLORER="${TTRACE_BUILD}/bin/ttrace-explorer"
rm -rf "${DEMO}"
mkdir -p "${DEMO}"
cd "${TTRACE_ROOT}"

INJECT=()
[[ "${BUG}" != "none" ]] && INJECT=(--inject "${BUG}")

log "capturing the reference (1 process, nominal + 2 perturbed variants)"
"${TTRACE_PY}" -m examples.gpt.train --reference --perturbations 2 --out "${DEMO}/reference" \
  >"${DEMO}/reference.log" 2>&1 || { cat "${DEMO}/reference.log"; exit 1; }
log "capturing the candidate (torchrun, 4 ranks, TP2 x DP2 with sequence parallelism, bug: ${BUG})"
"${TTRACE_VENV}/bin/torchrun" --standalone --nproc-per-node 4 -m examples.gpt.train \
  --tp 2 --dp 2 "${INJECT[@]}" --out "${DEMO}/candidate" \
  >"${DEMO}/candidate.log" 2>&1 || { cat "${DEMO}/candidate.log"; exit 1; }

log "validating both bundles"
"${TTRACE}" validate "${DEMO}/reference" "${DEMO}/candidate"

log "comparing"
set +e
"${TTRACE}" diff "${DEMO}/reference" "${DEMO}/candidate" \
  --json "${DEMO}/diff.json" --markdown "${DEMO}/report.md"
verdict=$?
set -e
if ((verdict == 2)); then
  log "the bundles could not be compared"
  exit 2
fi

if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  log "opening the explorer"
  exec "${EXPLORER}" "${DEMO}/reference" "${DEMO}/candidate"
fi
# Headless, the explorer exits as `ttrace diff` does: 1 only says the demo's bug was found.
"${EXPLORER}" --screenshot "${DEMO}/explorer.png" "${DEMO}/reference" "${DEMO}/candidate" ||
  (($? == 1))
log "no display: report ${DEMO}/report.md, JSON ${DEMO}/diff.json, screenshot ${DEMO}/explorer.png"
