"""Shared by the install tests: where the source and the build are, and the demo bundles the
installed programs open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE_DIR = Path(__file__).resolve().parents[2]
VERSION = (SOURCE_DIR / "python" / "ttrace" / "VERSION").read_text(encoding="ascii").strip()


def build_dir() -> Path:
    """CTest passes the build folder; by hand, the README's build/."""
    return Path(os.environ.get("TTRACE_BUILD_DIR", SOURCE_DIR / "build"))


def run(
    command: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    expect: int = 0,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Runs a command; fails the test with its output unless it exits with `expect`."""
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, env=env, cwd=cwd, timeout=timeout
    )
    assert done.returncode == expect, (
        f"{command}: exit {done.returncode}, expected {expect}\n{done.stdout}\n{done.stderr}"
    )
    return done


@pytest.fixture(scope="session")
def demo_bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small reference and a TP2xDP2 candidate with an injected bug (seconds to write)."""
    out = tmp_path_factory.mktemp("demo")
    env = dict(os.environ, PYTHONPATH=str(SOURCE_DIR / "python"))
    run([sys.executable, "-m", "ttrace_testing.demo_bundles", str(out), "--inject-bug"], env=env)
    return out / "reference", out / "candidate"
