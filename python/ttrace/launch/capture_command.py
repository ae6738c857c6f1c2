"""`ttrace capture` (`python -m ttrace capture`): run an unchanged training script as a
capture, its loop untouched (docs/integrations.md).

    ttrace capture --reference --perturbations 2 --out ref/ -- python train.py ...
    ttrace capture --candidate --out cand/ -- torchrun --nproc-per-node 4 train.py ...

A reference with K perturbed variants runs the command K + 1 times, each run one variant
(`ttrace.capture.variant_run`), and joins them into one bundle (`variant_join`): the bundle
`tracer.run_variants()` writes, for loops a framework owns. A candidate runs once. The
script creates its Tracer as usual (or a framework integration does); the launcher's role,
folder and variant override what the script passes.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ttrace.bundle.variant_join import VariantJoinError, join_variant_runs
from ttrace.capture.variant_run import VariantRun

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ttrace capture",
        description="Run a training script (after --) as a ttrace capture without changing "
        "its loop. A reference with --perturbations K runs it K + 1 times, one variant per "
        "run, and joins the runs into one bundle.",
    )
    role = p.add_mutually_exclusive_group(required=True)
    role.add_argument("--reference", action="store_true", help="capture the trusted reference")
    role.add_argument("--candidate", action="store_true", help="capture the candidate")
    p.add_argument("--out", required=True, type=Path, help="the bundle folder to write")
    p.add_argument(
        "--perturbations",
        type=int,
        default=None,
        help="perturbed variants of the reference (default 2; 0: the analytic bound only)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- the training command")
    return p


def _run(command: Sequence[str], run: VariantRun, label: str) -> int:
    print(f"ttrace capture: {label}: {shlex.join(command)}", file=sys.stderr, flush=True)
    env = dict(os.environ) | run.environment()
    try:
        return subprocess.call(list(command), env=env)
    except OSError as exc:
        print(f"ttrace capture: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _staging(out: Path) -> Path:
    """Beside the bundle, never inside it: the nominal run clears its own folder."""
    return out.with_name(out.name + ".variant-runs")


def _capture_reference(command: Sequence[str], out: Path, count: int) -> int:
    staging = _staging(out)
    shutil.rmtree(staging, ignore_errors=True)
    runs = [staging / f"perturbed-{k}" for k in range(1, count + 1)]
    order = [
        (VariantRun("reference", d, k, count), f"perturbed-{k}") for k, d in enumerate(runs, 1)
    ]
    order.append((VariantRun("reference", out, 0, count), "nominal"))
    for n, (run, label) in enumerate(order, start=1):
        code = _run(command, run, f"run {n} of {len(order)} ({label})")
        if code != 0:
            print(
                f"ttrace capture: the {label} run exited with {code}; no reference was "
                f"written to {out}",
                file=sys.stderr,
            )
            return EXIT_RUN_FAILED
    try:
        manifest = join_variant_runs(out, runs)
    except (VariantJoinError, OSError, ValueError) as exc:
        print(f"ttrace capture: cannot join the runs: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    shutil.rmtree(staging, ignore_errors=True)
    print(
        f"ttrace capture: reference written to {out} (variants: {', '.join(manifest.variants)})",
        file=sys.stderr,
    )
    return EXIT_OK


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("ttrace capture: give the training command after --", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.candidate and args.perturbations is not None:
        print("ttrace capture: only a reference has perturbed variants", file=sys.stderr)
        return EXIT_BAD_INPUT
    count = 2 if args.perturbations is None else args.perturbations
    if count < 0:
        print("ttrace capture: --perturbations must be >= 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = args.out.resolve()
    if args.reference:
        return _capture_reference(command, out, count)
    code = _run(command, VariantRun("candidate", out), "candidate")
    if code != 0:
        print(f"ttrace capture: the candidate run exited with {code}", file=sys.stderr)
        return EXIT_RUN_FAILED
    return EXIT_OK
