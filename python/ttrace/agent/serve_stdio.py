"""`ttrace serve --stdio`: the relaunch driven by a front end over a pipe, as the explorer does
over the user's ssh (docs/localize.md, "From the explorer").

The agent's endpoint and token travel back on stdout, as one JSON line once it serves, so the
token is never on a command line and never in a file anyone else can read (its file lives in a
private folder that is removed at the end). The front end holds stdin open for as long as it
wants the agent: end of input (the front end closed it, or its ssh connection died) stops the
relaunch, every rank included, so a cancelled start leaves no process behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .relaunch_command import RelaunchCommand, child_environment

GRACE_S = 5.0  # torchrun passes SIGTERM on to its workers; a replay agent has nothing to save
POLL_S = 0.1


def _emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (Linux /proc): torchrun starts each worker in a session of
    its own, so neither a process group nor a session reaches them all."""
    out: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            with contextlib.suppress(OSError, ValueError):
                children = [int(c) for c in (task / "children").read_text().split()]
                out += children
                frontier += children
    return out


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the relaunch (torchrun passes it on), then SIGKILL whatever is left of it."""
    if proc.poll() is not None:
        return
    tree = _descendants(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=GRACE_S)
    for pid in [proc.pid, *tree, *_descendants(proc.pid)]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _watch_stdin(closed: threading.Event) -> None:
    with contextlib.suppress(OSError, ValueError):
        while sys.stdin.buffer.read1(4096):
            pass
    closed.set()


def _serving(endpoint: Path, token: Path) -> tuple[str, str] | None:
    if not (endpoint.exists() and token.exists()):
        return None
    text = endpoint.read_text(encoding="ascii")
    secret = token.read_text(encoding="ascii").strip()
    if not text.endswith("\n") or not secret:
        return None  # written but not finished
    return text.strip(), secret


def run_over_stdio(command: RelaunchCommand, folder: Path) -> int:
    """Run `command` (its agent writing endpoint and token into `folder`), announce where it
    serves on stdout, and stop it when stdin ends. The exit status is the relaunch's."""
    endpoint_file = Path(command.env["TTRACE_AGENT_ENDPOINT_FILE"])
    token_file = Path(command.env["TTRACE_TOKEN_FILE"])
    closed = threading.Event()
    threading.Thread(target=_watch_stdin, args=(closed,), daemon=True).start()
    # The ranks' own output goes to stderr (the front end's log): stdout carries events only.
    proc = subprocess.Popen(
        command.argv,
        cwd=command.cwd,
        env=child_environment(command),
        stdin=subprocess.DEVNULL,
        stdout=sys.stderr.fileno(),
    )
    _emit({"event": "started", "world_size": command.world_size})
    announced = False
    try:
        while proc.poll() is None and not closed.is_set():
            if not announced and (where := _serving(endpoint_file, token_file)) is not None:
                _emit({"event": "serving", "endpoint": where[0], "token": where[1]})
                token_file.unlink()  # the secret now lives only in the front end
                announced = True
            time.sleep(POLL_S)
        if closed.is_set():
            print("ttrace serve: input closed; stopping the relaunch", file=sys.stderr, flush=True)
        _stop(proc)
        code = proc.returncode if proc.returncode is not None else 1
        with contextlib.suppress(OSError, ValueError):
            _emit({"event": "exited", "code": code})
        return code
    finally:
        _stop(proc)
        shutil.rmtree(folder, ignore_errors=True)


def private_folder() -> Path:
    """A folder only this user can enter (mkdtemp makes it 0700) for the endpoint and token."""
    return Path(tempfile.mkdtemp(prefix="ttrace-serve-"))
