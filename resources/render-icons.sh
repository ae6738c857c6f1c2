#!/usr/bin/env bash
# Renders the installed hicolor icons from ttrace-explorer.svg (needs rsvg-convert, Debian's
# librsvg2-bin). The PNGs are committed so that building needs no SVG renderer; run this
# after changing the SVG.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
for size in 16 24 32 48 64 128 256; do
  rsvg-convert -w "${size}" -h "${size}" ttrace-explorer.svg -o "icons/${size}.png"
done
