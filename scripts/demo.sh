#!/usr/bin/env bash
# The demo: capture a single-device reference and a 4-rank TP2xDP2 candidate of the example
# GPT with an injected silent bug, compare them, copy the bundles to another folder (as off a
# cluster), localize the bug with `ttrace serve` relaunching the candidate's script from the
# copies (the candidate job is long gone, docs/localize.md), and open the explorer on them
# (or, with no display, print the reports and save a screenshot of the explorer).
#
#   ./scripts/demo.sh                 # default bug: sp-norm-grad-not-reduced
#   TTRACE_DEMO_BUG=none ./scripts/demo.sh      # a correct candidate: the diff is clean
#   TTRACE_DEMO_BUG=vocab-ce-missing-allreduce ./scripts/demo.sh
#   (the bugs whose code runs in TP2 x DP2; any other is refused with the flags it needs)
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

LAYOUT=(--tp 2 --dp 2)
INJECT=()
if [[ "${BUG}" != "none" ]]; then
  # Only a bug whose code runs in the demo's layout: any other would give a correct candidate
  # and a clean diff that reads like a missed bug (the message names the flags it needs).
  "${TTRACE_PY}" -m examples.gpt.bugs "${BUG}" "${LAYOUT[@]}" || exit 2
  INJECT=(--inject "${BUG}")
fi

log "capturing the reference (1 process, nominal + 2 perturbed variants)"
"${TTRACE_PY}" -m examples.gpt.train --reference --perturbations 2 --out "${DEMO}/reference" \
  >"${DEMO}/reference.log" 2>&1 || { cat "${DEMO}/reference.log"; exit 1; }
log "capturing the candidate (torchrun, 4 ranks, TP2 x DP2 with sequence parallelism, bug: ${BUG})"
"${TTRACE_VENV}/bin/torchrun" --standalone --nproc-per-node 4 -m examples.gpt.train \
  "${LAYOUT[@]}" "${INJECT[@]}" --out "${DEMO}/candidate" >"${DEMO}/candidate.log" 2>&1 ||
  { cat "${DEMO}/candidate.log"; exit 1; }

# As users do: the bundles are copied off the cluster; the candidate job has exited. From the
# copies alone, `ttrace serve` relaunches the candidate's script in replay mode (it shows the
# command; --yes confirms it) and serves replays until the demo ends; everything below reads
# the copies.
log "copying the bundles to ${DEMO}/copied (the candidate job has exited)"
mkdir -p "${DEMO}/copied"
cp -r "${DEMO}/reference" "${DEMO}/candidate" "${DEMO}/copied/"
REF="${DEMO}/copied/reference"
CAND="${DEMO}/copied/candidate"
SERVE_PID=""
stop_serve() {
  if [[ -n "${SERVE_PID}" ]] && kill -0 "${SERVE_PID}" 2>/dev/null; then
    log "stopping ttrace serve"
    kill -TERM -- "-${SERVE_PID}" 2>/dev/null || true # its process group: torchrun and ranks
    for _ in $(seq 1 50); do
      kill -0 "${SERVE_PID}" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL -- "-${SERVE_PID}" 2>/dev/null || true
  fi
}
trap stop_serve EXIT
log "ttrace serve: relaunching the candidate from the copied bundles"
serve_start=${SECONDS}
set -m # serve gets its own process group, so the trap reaches every rank
TTRACE_PYTHON="${TTRACE_PY}" "${TTRACE}" serve --reference "${REF}" --candidate "${CAND}" \
  --endpoint-file "${DEMO}/agent.endpoint" --token-file "${DEMO}/agent.token" --idle 1800 \
  --yes >"${DEMO}/serve.log" 2>&1 &
SERVE_PID=$!
set +m
# The relaunch starts (imports, process groups, the model) while the bundles are compared.
log "validating both bundles"
"${TTRACE}" validate "${REF}" "${CAND}"

log "comparing"
set +e
"${TTRACE}" diff "${REF}" "${CAND}" \
  --json "${DEMO}/diff.json" --markdown "${DEMO}/report.md"
verdict=$?
set -e
if ((verdict == 2)); then
  log "the bundles could not be compared"
  exit 2
fi

# The agent writes host:port and a newline once it is bound.
# ($(tail -c1) is empty exactly when the last byte is the newline.)
until [[ -s "${DEMO}/agent.endpoint" && -z "$(tail -c1 "${DEMO}/agent.endpoint")" ]]; do
  if ! kill -0 "${SERVE_PID}" 2>/dev/null; then
    cat "${DEMO}/serve.log"
    log "ttrace serve exited before serving"
    exit 1
  fi
  sleep 0.2
done
AGENT="$(head -n1 "${DEMO}/agent.endpoint")"
log "the relaunched candidate serves replays on ${AGENT} ($((SECONDS - serve_start)) s after ttrace serve)"

log "localizing: replaying the divergent modules with the reference's inputs"
set +e
"${TTRACE}" localize "${REF}" "${CAND}" --agent "${AGENT}" \
  --token-file "${DEMO}/agent.token" --json "${DEMO}/localize.json" \
  --markdown "${DEMO}/localize.md"
localized=$?
set -e
if ((localized == 2)); then
  log "localize failed (above)"
  exit 2
fi
# The explorer connects to the same agent: one click on the first divergence, or Localize All.
AGENT_ARGS=(--agent "${AGENT}" --token-file "${DEMO}/agent.token")
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  log "opening the explorer, connected to the agent (serving stops when the explorer closes)"
  "${EXPLORER}" "${AGENT_ARGS[@]}" "${REF}" "${CAND}"
  exit 0
fi
# Headless, the explorer exits as `ttrace diff` does: 1 only says the demo's bug was found.
"${EXPLORER}" --screenshot "${DEMO}/explorer.png" "${AGENT_ARGS[@]}" --localize all \
  "${REF}" "${CAND}" || (($? == 1))
log "no display: reports ${DEMO}/report.md and ${DEMO}/localize.md, JSON ${DEMO}/diff.json and ${DEMO}/localize.json, screenshot ${DEMO}/explorer.png (localized)"
