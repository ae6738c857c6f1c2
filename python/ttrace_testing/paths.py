"""Where the source tree is: the test-support modules run the example model and the CLI from
it, whichever folder imports them."""

from __future__ import annotations

from pathlib import Path

# python/ttrace_testing/paths.py -> the repository root.
REPO = Path(__file__).resolve().parents[2]
