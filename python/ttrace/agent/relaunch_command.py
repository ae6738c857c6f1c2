"""The command `ttrace serve` runs: the candidate's own program as its bundle recorded it,
under its launcher (or the LAUNCH the user gives), in replay mode.

The program part is what followed the interpreter (`-m examples.gpt.train --tp 2 ...` or
`train.py ...`); LAUNCH replaces only the launcher and is followed by the program part as
torchrun takes it (for srun or mpirun, end LAUNCH with the interpreter: `srun -n 4 python`).
A LAUNCH that names the program itself (`torchrun --nproc-per-node 2 train.py --tp 2 --dp 1`)
is the whole command: the user gives the script's own options, e.g. a smaller layout
(`relaunch_layout.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .launch_world import launch_world_size, launcher_part
from .relaunch import CANDIDATE_ENV, REPLAY_ENV

# Where the agent writes its endpoint and token: chosen per start, so not part of what the user
# confirms (the digest of a plan leaves them out).
VOLATILE_ENV = ("TTRACE_AGENT_ENDPOINT_FILE", "TTRACE_TOKEN_FILE")


class RelaunchCommandError(ValueError):
    """The bundle does not say enough to relaunch it here, or says it inconsistently."""


@dataclass(frozen=True)
class RelaunchCommand:
    argv: list[str]
    cwd: Path
    env: dict[str, str]  # set on top of this process's environment
    launcher: dict[str, Any]
    whole: bool = False  # LAUNCH named the program: it is the whole command, options included
    # Processes LAUNCH starts, from its launcher's options (None: no LAUNCH, or it does not say).
    launched: int | None = None

    @property
    def job_world_size(self) -> int:
        return int(self.launcher.get("world_size", 1))

    @property
    def world_size(self) -> int:
        """The relaunch's processes: LAUNCH's when it says, else the job's (which the recorded
        launcher, or a LAUNCH that gives no count, starts)."""
        return self.launched if self.launched is not None else self.job_world_size

    def show(self) -> str:
        lines = [f"  cd {self.cwd}"]
        lines += [f"  {k}={v}" for k, v in self.env.items()]
        lines.append("  " + " ".join(_quote(a) for a in self.argv))
        return "\n".join(lines)

    def digest(self) -> str:
        """SHA-256 of what runs (program, folder, environment set), as a front end confirms it
        before the start (`ttrace serve --print-plan`, then `--plan-digest`)."""
        env = {k: v for k, v in self.env.items() if k not in VOLATILE_ENV}
        text = json.dumps([self.argv, str(self.cwd), env], sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def plan(self) -> dict[str, Any]:
        """The command as JSON, for a front end to show before anything runs."""
        env = {k: v for k, v in self.env.items() if k not in VOLATILE_ENV}
        return {
            "argv": list(self.argv),
            "cwd": str(self.cwd),
            "env": env,
            "world_size": self.world_size,
            "job_world_size": self.job_world_size,
            "launcher": dict(self.launcher),
            "command": RelaunchCommand(self.argv, self.cwd, env, self.launcher).show(),
            "digest": self.digest(),
        }


def _quote(arg: str) -> str:
    safe = arg and all(c.isalnum() or c in "-_./=:,+@%" for c in arg)
    return arg if safe else "'" + arg.replace("'", "'\\''") + "'"


def default_launcher(launcher: Mapping[str, Any]) -> list[str]:
    """The recorded launcher, on this host's interpreter; single-node only."""
    name = str(launcher.get("name", "python"))
    world = int(launcher.get("world_size", 1))
    nnodes = int(launcher.get("nnodes", 1))
    if name == "python" and world == 1:
        return [sys.executable]
    if name == "torchrun" and nnodes == 1:
        local = int(launcher.get("local_world_size", world))
        return [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={local}",
        ]  # fmt: skip
    raise RelaunchCommandError(
        f"the job ran under {name} with {world} ranks on {nnodes} node(s): give the launcher "
        "after `--` (e.g. `-- torchrun --nnodes 2 ...` or `-- srun -n 8 python`)"
    )


def names_program(launch: Sequence[str], argv: Sequence[str]) -> bool:
    """Whether LAUNCH holds the recorded program (its script or `-m` module) itself."""
    program = argv[1] if len(argv) > 1 and argv[0] == "-m" else argv[0]
    script = program.endswith(".py")
    return any(a == program or (script and Path(a).name == Path(program).name) for a in launch)


def relaunch_command(
    manifest: Mapping[str, Any],
    reference: Path,
    candidate: Path,
    launch: Sequence[str],
    agent_env: Mapping[str, str],
    cwd: Path | None = None,
) -> RelaunchCommand:
    record = (manifest.get("replay") or {}).get("launch")
    if not record or not record.get("argv"):
        raise RelaunchCommandError(
            f"{candidate}/manifest.json records no launch (`replay.launch`): the bundle was "
            "captured before ttrace recorded it, or is not a candidate's"
        )
    where = cwd if cwd is not None else Path(str(record.get("cwd", ".")))
    if not where.is_dir():
        raise RelaunchCommandError(
            f"the job ran in {where}, which does not exist here: pass --cwd with the folder "
            "holding the training code"
        )
    argv = list(record["argv"])
    whole = bool(launch) and names_program(launch, argv)
    launcher = list(launch) if launch else default_launcher(record.get("launcher", {}))
    env = dict(record.get("env", {}))
    env.update(agent_env)
    env[REPLAY_ENV] = "1"
    env[CANDIDATE_ENV] = str(candidate.resolve())
    env["TTRACE_REFERENCE"] = str(reference.resolve())
    launched = launch_world_size(launcher_part(launch, argv if whole else [])) if launch else None
    if whole:
        argv = []  # LAUNCH is the whole command, the script's options included
    return RelaunchCommand(
        [*launcher, *argv], where, env, dict(record.get("launcher", {})), whole, launched
    )


def child_environment(command: RelaunchCommand) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TTRACE_SERVE"}
    env.update(command.env)
    return env
