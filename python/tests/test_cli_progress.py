"""`ttrace diff` and `ttrace validate` show their progress on a terminal (a real pseudo-terminal
as stderr), never in a pipe or a log, and not with --quiet; the verdict and exit status are the
same either way."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest
from cli_paths import ttrace_binary

from ttrace_testing import demo_bundles


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pair")
    assert demo_bundles.main([str(out)]) == 0
    return out


def diff_on_terminal(pair: Path, *extra: str) -> tuple[int, str, str]:
    """Runs the diff with a pseudo-terminal as stderr; returns exit, stdout, terminal text."""
    cmd = [str(ttrace_binary()), "diff", "--no-cache", *extra]
    return on_terminal([*cmd, str(pair / "reference"), str(pair / "candidate")])


def on_terminal(cmd: list[str]) -> tuple[int, str, str]:
    """Runs `cmd` with a pseudo-terminal as stderr; returns exit, stdout, terminal text."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal (EIO on Linux)
            break
        if not chunk:
            break
        seen += chunk
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=120)
    os.close(master)
    return code, out, seen.decode("utf-8", "replace")


def test_progress_on_a_terminal(pair: Path) -> None:
    code, out, terminal = diff_on_terminal(pair)
    assert code == 0, out + terminal
    assert "[ttrace] " in terminal and "% " in terminal, terminal
    assert "tensors" in terminal, terminal  # tensors and bytes compared, with the rate
    # The line is cleared before the summary, which goes to stdout untouched.
    assert "[ttrace]" not in out and "clean" in out.lower(), out


def test_quiet_and_pipes_show_no_progress(pair: Path) -> None:
    code, out, terminal = diff_on_terminal(pair, "--quiet")
    assert (code, out.strip(), terminal.strip()) == (0, "clean", "")
    cmd = [str(ttrace_binary()), "diff", "--no-cache", str(pair / "reference")]
    piped = subprocess.run([*cmd, str(pair / "candidate")], capture_output=True, text=True)
    assert piped.returncode == 0 and "[ttrace]" not in piped.stderr, piped.stderr


def test_validate_progress_on_a_terminal_only(pair: Path) -> None:
    bundle = str(pair / "candidate")
    code, out, terminal = on_terminal([str(ttrace_binary()), "validate", bundle])
    assert code == 0, out + terminal
    assert "[ttrace] " in terminal and "% " in terminal, terminal
    assert "tensors" in terminal, terminal  # tensors and bytes checked, with the rate
    assert "[ttrace]" not in out and "valid" in out, out
    code, out, terminal = on_terminal([str(ttrace_binary()), "validate", "--quiet", bundle])
    assert (code, terminal.strip()) == (0, ""), terminal
    assert "valid" in out, out
    piped = subprocess.run(
        [str(ttrace_binary()), "validate", bundle], capture_output=True, text=True, check=False
    )
    assert piped.returncode == 0 and "[ttrace]" not in piped.stderr, piped.stderr
