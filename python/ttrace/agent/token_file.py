"""The agent's secret: a random 256-bit token in a file only its owner can read."""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path


def new_token() -> str:
    return secrets.token_hex(32)


def default_token_path(port: int) -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "ttrace" if runtime else Path.home() / ".cache" / "ttrace"
    return base / f"agent-{port}.token"


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` with mode 0600, also when the file existed with wider modes
    (the mode is set on the open descriptor before anything is written)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)


def token_matches(expected: str, given: str) -> bool:
    """Constant-time comparison (a timing side channel must not reveal the token)."""
    return hmac.compare_digest(expected.encode("ascii"), given.encode("utf-8", "replace"))
