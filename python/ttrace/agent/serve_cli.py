"""`ttrace serve` (`python -m ttrace serve`): relaunch the candidate's script from its bundles
in replay mode and serve localize replays, the job long gone (docs/localize.md).

Nothing from a bundle runs unconfirmed: the command is shown first and runs only after the
user answers yes (or `--yes`, for scripts). The relaunch prints where it serves, as a live
agent does, and writes the endpoint and token files given here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .relaunch_command import (
    VOLATILE_ENV,
    RelaunchCommand,
    RelaunchCommandError,
    child_environment,
    relaunch_command,
)
from .serve_stdio import private_folder, run_over_stdio

EXIT_BAD_INPUT = 2
EXIT_NOT_CONFIRMED = 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ttrace serve",
        description="Relaunch the candidate's training script from its bundles, in replay "
        "mode, and serve `ttrace localize` and the explorer. LAUNCH (after --) replaces the "
        "recorded launcher, e.g. `-- torchrun --nproc-per-node 4` or `-- srun -n 8 python`.",
    )
    p.add_argument("--reference", required=True, type=Path, help="the reference bundle")
    p.add_argument("--candidate", required=True, type=Path, help="the candidate bundle")
    p.add_argument("--endpoint-file", type=Path, help="write host:port here once serving")
    p.add_argument("--token-file", type=Path, help="write the token here (mode 0600)")
    p.add_argument("--port", type=int, help="port to bind on loopback (default: a free one)")
    p.add_argument("--idle", type=float, default=3600.0, help="exit after this many idle s")
    p.add_argument("--cwd", type=Path, help="run in this folder (default: the job's own)")
    p.add_argument("--yes", action="store_true", help="run without asking (for scripts)")
    p.add_argument(
        "--print-plan",
        action="store_true",
        help="print the relaunch command as JSON on stdout (with its digest) and run nothing",
    )
    p.add_argument(
        "--plan-digest",
        help="run only if the command's digest is this one (what --print-plan showed and the "
        "user confirmed); confirms the run",
    )
    p.add_argument(
        "--stdio",
        action="store_true",
        help="for a front end over ssh: announce the endpoint and token as JSON lines on "
        "stdout, and stop the relaunch when stdin closes",
    )
    return p


def _manifest(path: Path, what: str) -> dict[str, Any]:
    file = path / "manifest.json"
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RelaunchCommandError(f"{what} {path}: not a trace bundle ({exc.strerror})") from None
    except ValueError as exc:
        raise RelaunchCommandError(f"{file}: not valid JSON: {exc}") from None


def _agent_env(a: argparse.Namespace) -> dict[str, str]:
    env = {"TTRACE_AGENT_IDLE": f"{a.idle:g}"}
    if a.endpoint_file is not None:
        env["TTRACE_AGENT_ENDPOINT_FILE"] = str(a.endpoint_file.resolve())
    if a.token_file is not None:
        env["TTRACE_TOKEN_FILE"] = str(a.token_file.resolve())
    if a.port is not None:
        env["TTRACE_AGENT_PORT"] = str(a.port)
    return env


def _confirmed(yes: bool, digest: str | None, command: RelaunchCommand) -> bool:
    if digest is not None:
        if digest == command.digest():
            return True
        print(
            "ttrace serve: the relaunch command is not the one confirmed (its digest is "
            f"{command.digest()}, not {digest}): the bundle or the host changed; show it again",
            file=sys.stderr,
        )
        return False
    if yes:
        return True
    if not sys.stdin.isatty():
        print("ttrace serve: not confirmed; run it with --yes to confirm", file=sys.stderr)
        return False
    answer = input("Run it? [y/N] ").strip().lower()
    return answer in ("y", "yes")


def _run(command: RelaunchCommand) -> int:
    """The relaunch, in this process group (a terminal's Ctrl-C or a kill of the group
    reaches every rank); SIGINT/SIGTERM sent to this process alone are passed on."""
    proc = subprocess.Popen(command.argv, cwd=command.cwd, env=child_environment(command))

    def forward(signum: int, _: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return proc.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _plan(a: argparse.Namespace, launch: list[str], folder: Path | None) -> RelaunchCommand:
    _manifest(a.reference, "reference")
    manifest = _manifest(a.candidate, "candidate")
    env = _agent_env(a)
    if folder is not None:  # --stdio: the agent's files in a private folder
        files = (str(folder / "endpoint"), str(folder / "token"))
        env.update(zip(VOLATILE_ENV, files, strict=True))
    return relaunch_command(manifest, a.reference, a.candidate, launch, env, a.cwd)


def _ranks(n: int) -> str:
    return f"{n} rank" if n == 1 else f"{n} ranks"


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    launch: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, launch = args[:cut], args[cut + 1 :]
    a = _parser().parse_args(args)
    folder = private_folder() if a.stdio and not a.print_plan else None
    try:
        command = _plan(a, launch, folder)
    except RelaunchCommandError as exc:
        print(f"ttrace serve: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if a.print_plan:
        print(json.dumps(command.plan(), indent=2))
        return 0
    ranks, job = command.world_size, command.job_world_size
    # A LAUNCH may start fewer ranks than the job had (the script's own smaller layout).
    if command.launched is None and command.whole:
        size = f"the layout LAUNCH gives; the job had {_ranks(job)}"
    else:
        size = _ranks(ranks) if ranks == job else f"{_ranks(ranks)}; the job had {_ranks(job)}"
    print(
        f"ttrace serve: relaunching the candidate {a.candidate} in replay mode "
        f"({size}), no training step runs:\n"
        f"{command.show()}",
        file=sys.stderr,
        flush=True,
    )
    if not _confirmed(a.yes, a.plan_digest, command):
        return EXIT_NOT_CONFIRMED
    if folder is not None:
        return run_over_stdio(command, folder)
    return _run(command)
