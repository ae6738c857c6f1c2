"""How many processes a LAUNCH starts, read from its launcher's own options.

`ttrace serve -- LAUNCH` may relaunch the job on fewer devices than it had (a TP2 relaunch of a
TP2xDP2 job): what the plan shows and the explorer asks the user to confirm is the relaunch's
size, not the job's. Only the launcher's options count (those before the program): the
script's own options may use the same letters (`-n`) for something else.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

TORCHRUN = ("torchrun", "torch.distributed.run", "torch.distributed.launch")
SRUN = ("srun",)
MPIRUN = ("mpirun", "mpiexec", "mpiexec.hydra", "orterun")


def _options(launcher: Sequence[str]) -> dict[str, str]:
    """`--key value`, `--key=value`, `-k value` and `-kVALUE` as {key: value} (later wins)."""
    out: dict[str, str] = {}
    for i, arg in enumerate(launcher):
        if not arg.startswith("-") or arg == "-m":
            continue
        key, sep, value = arg.partition("=")
        if not sep and i + 1 < len(launcher) and not launcher[i + 1].startswith("-"):
            value = launcher[i + 1]
        if not sep and not arg.startswith("--") and len(arg) > 2 and arg[2:].isdigit():
            key, value = arg[:2], arg[2:]  # srun's -n8
        out[key.replace("_", "-")] = value
    return out


def _count(value: str | None, default: int | None) -> int | None:
    if value is None:
        return default
    return int(value) if value.isdigit() and int(value) > 0 else None


def _first(options: dict[str, str], *keys: str) -> str | None:
    return next((options[k] for k in keys if k in options), None)


def launch_world_size(launcher: Sequence[str]) -> int | None:
    """Processes `launcher` (LAUNCH up to the program) starts; None when its options do not say
    (an elastic node range, `--nproc-per-node gpu`, an allocation's default task count)."""
    names = [Path(a).name for a in launcher]
    opts = _options(launcher)
    if any(n in TORCHRUN for n in names):
        per_node = _count(_first(opts, "--nproc-per-node"), 1)
        nodes = _count(_first(opts, "--nnodes"), 1)
        return per_node * nodes if per_node and nodes else None
    if any(n in SRUN for n in names):
        tasks = _count(_first(opts, "-n", "--ntasks"), None)
        if tasks is not None:
            return tasks
        per_node = _count(_first(opts, "--ntasks-per-node"), None)
        nodes = _count(_first(opts, "-N", "--nodes"), None)
        return per_node * nodes if per_node and nodes else None
    if any(n in MPIRUN for n in names):
        return _count(_first(opts, "-n", "-np", "--np", "-c"), None)
    if names and names[0].startswith("python"):
        return 1  # the interpreter alone: one process
    return None


def launcher_part(launch: Sequence[str], argv: Sequence[str]) -> list[str]:
    """LAUNCH up to the recorded program when LAUNCH names it (the whole command), else all of
    it (LAUNCH replaces only the launcher)."""
    if not argv:
        return list(launch)
    program = argv[1] if len(argv) > 1 and argv[0] == "-m" else argv[0]
    script = program.endswith(".py")
    for i, arg in enumerate(launch):
        if arg == program or (script and Path(arg).name == Path(program).name):
            return list(launch[:i])
    return list(launch)
