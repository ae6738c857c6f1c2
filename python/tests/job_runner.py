"""Runs a training script as its users would (one process, or torchrun over gloo) and compares
bundles with the real `ttrace diff`, for the tests of frameworks we did not write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from cli_paths import ttrace_binary

PYTHON_DIR = Path(__file__).resolve().parents[1]


def run_module(module: str, args: Sequence[str], nproc: int, timeout: int) -> str:
    """`python -m MODULE ARGS` from python/, under torchrun when nproc > 1; its standard
    output; raises with the tail of its output when it fails."""
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), OMP_NUM_THREADS="1")
    env["PYTHONWARNINGS"] = "ignore"
    target = ["-m", module, *args]
    if nproc == 1:
        cmd = [sys.executable, *target]
    else:
        launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
        cmd = [sys.executable, *launcher, *target]
    proc = subprocess.run(
        cmd, cwd=PYTHON_DIR, env=env, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
        )
    return proc.stdout


def diff(ref: Path, cand: Path, work: Path) -> tuple[int, dict, str]:
    """(exit code, JSON report, text report) of `ttrace diff REF CAND`."""
    report = work / f"{cand.name}.json"
    proc = subprocess.run(
        [str(ttrace_binary()), "diff", "--no-cache", "--json", str(report), str(ref), str(cand)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, json.loads(report.read_text()), proc.stdout


def summary_text(name: str, rc: int, report: dict) -> str:
    """One line of a diff's counts, its exit code and first divergent module, for the log."""
    s = report["summary"]
    return (
        f"\n{name}: compared {s['compared']} divergent {s['divergent']} invalid {s['invalid']} "
        f"missing {s['missing']} exit {rc} first {report['first_divergence']['module']}"
    )


def printed_counts(name: str, rc: int, report: dict) -> dict:
    """The diff's compared/divergent/invalid/missing/unresolved counts, printed with its exit
    code and first divergence (module and phase) for the log."""
    s = report["summary"]
    picked = {k: s[k] for k in ("compared", "divergent", "invalid", "missing", "unresolved")}
    first = report["first_divergence"]
    print(f"\n{name}: {picked} exit {rc} first {first['module']} ({first['phase']})")
    return picked
