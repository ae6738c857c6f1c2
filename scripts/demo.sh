#!/usr/bin/env bash
# The demo: capture a single-device reference and a 4-rank TP2xDP2 candidate of the example
# GPT with an injected silent bug, compare them, localize the bug by replaying modules in the
# candidate job (which stays up serving them, docs/localize.md), and open the explorer on them
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
# The candidate job keeps serving replays after its capture (TTRACE_SERVE=1); it is stopped
# when the demo ends, however it ends.
AGENT_PID=""
stop_agent() {
  if [[ -n "${AGENT_PID}" ]] && kill -0 "${AGENT_PID}" 2>/dev/null; then
    log "stopping the candidate job"
    kill -TERM -- "-${AGENT_PID}" 2>/dev/null || true # its process group: torchrun and ranks
    for _ in $(seq 1 50); do
      kill -0 "${AGENT_PID}" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL -- "-${AGENT_PID}" 2>/dev/null || true
  fi
}
trap stop_agent EXIT

log "capturing the candidate (torchrun, 4 ranks, TP2 x DP2 with sequence parallelism, bug: ${BUG})"
set -m # the job gets its own process group, so the trap reaches every rank
TTRACE_SERVE=1 TTRACE_REFERENCE="${DEMO}/reference" TTRACE_AGENT_IDLE=1800 \
  TTRACE_AGENT_ENDPOINT_FILE="${DEMO}/agent.endpoint" TTRACE_TOKEN_FILE="${DEMO}/agent.token" \
  "${TTRACE_VENV}/bin/torchrun" --standalone --nproc-per-node 4 -m examples.gpt.train \
  "${LAYOUT[@]}" "${INJECT[@]}" --out "${DEMO}/candidate" >"${DEMO}/candidate.log" 2>&1 &
AGENT_PID=$!
set +m
# The agent writes host:port and a newline once the capture is closed and it is bound.
# ($(tail -c1) is empty exactly when the last byte is the newline.)
until [[ -s "${DEMO}/agent.endpoint" && -z "$(tail -c1 "${DEMO}/agent.endpoint")" ]]; do
  if ! kill -0 "${AGENT_PID}" 2>/dev/null; then
    cat "${DEMO}/candidate.log"
    log "the candidate job exited before serving"
    exit 1
  fi
  sleep 0.5
done
AGENT="$(head -n1 "${DEMO}/agent.endpoint")"
log "the candidate job serves replays on ${AGENT}"

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

log "localizing: replaying the divergent modules with the reference's inputs"
set +e
"${TTRACE}" localize "${DEMO}/reference" "${DEMO}/candidate" --agent "${AGENT}" \
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
  log "opening the explorer, connected to the agent (the job stops when the explorer closes)"
  "${EXPLORER}" "${AGENT_ARGS[@]}" "${DEMO}/reference" "${DEMO}/candidate"
  exit 0
fi
# Headless, the explorer exits as `ttrace diff` does: 1 only says the demo's bug was found.
"${EXPLORER}" --screenshot "${DEMO}/explorer.png" "${AGENT_ARGS[@]}" --localize all \
  "${DEMO}/reference" "${DEMO}/candidate" || (($? == 1))
log "no display: reports ${DEMO}/report.md and ${DEMO}/localize.md, JSON ${DEMO}/diff.json and ${DEMO}/localize.json, screenshot ${DEMO}/explorer.png (localized)"
