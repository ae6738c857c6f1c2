"""Runs a framework's training script under the real `ttrace capture` (one process, or
torchrun over gloo), for the integration tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cli_paths import ttrace_binary
from job_runner import PYTHON_DIR


def capture(module: str, role: list[str], out: Path, nproc: int, args: list[str]) -> None:
    """`ttrace capture ROLE --out OUT -- [torchrun] python -m MODULE ARGS` from python/,
    through the real binary; raises with the output's tail when it fails."""
    # python/ first; what the caller's PYTHONPATH adds (packages kept outside the venv) after.
    path = os.pathsep.join(p for p in (str(PYTHON_DIR), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1")
    env |= {"TTRACE_PYTHON": sys.executable, "PYTHONWARNINGS": "ignore"}
    if nproc == 1:
        launch = [sys.executable, "-m", module]
    else:
        launch = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        launch += [f"--nproc-per-node={nproc}", "-m", module]
    cmd = [str(ttrace_binary()), "capture", *role, "--out", str(out), "--", *launch, *args]
    proc = subprocess.run(cmd, cwd=PYTHON_DIR, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
