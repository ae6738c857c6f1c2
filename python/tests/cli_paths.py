"""Locates the built C++ executables for tests that drive the real CLI."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def ttrace_binary(name: str = "ttrace") -> Path:
    """The executable from CTest's TTRACE_BIN_DIR, else from build/bin; fails if not built."""
    bin_dir = Path(os.environ.get("TTRACE_BIN_DIR", REPO_ROOT / "build" / "bin"))
    path = bin_dir / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is not built; run ./scripts/test.sh or build first")
    return path
