#!/usr/bin/env bash
# The demo: writes a reference and a distributed candidate bundle to build/demo and checks them.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ttrace_setup

DEMO="${TTRACE_BUILD}/demo"
rm -rf "${DEMO}"
"${TTRACE_PY}" -m ttrace.demo_bundles "${DEMO}"
"${TTRACE_BUILD}/bin/ttrace" validate "${DEMO}/reference" "${DEMO}/candidate"
