"""How the job was launched, for `ttrace serve` to relaunch it from the bundles alone.

Recorded on rank 0 when the capture closes: the interpreter's own argv (so `-m module` and
`script.py` are both kept as typed), the working directory, the launcher with its world
layout (torchrun's WORLD_SIZE / LOCAL_WORLD_SIZE, Slurm's, Open MPI's) and an allowlist of
environment variables that change numerics or layout. Nothing else from the environment is
kept: a name that looks like a credential is never recorded, even when allowlisted.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any

# Exact names, then prefixes, of variables that change what a job computes or how it lays
# out its work (threads, deterministic kernels, TF32, collective algorithms, fused-kernel
# switches of Transformer Engine and Megatron, hash seeds).
ENV_NAMES = frozenset(
    {
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "PYTHONHASHSEED",
        "CUBLAS_WORKSPACE_CONFIG",
        "NVIDIA_TF32_OVERRIDE",
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        "CUDA_DEVICE_MAX_CONNECTIONS",
        "CUDA_LAUNCH_BLOCKING",
        "NCCL_ALGO",
        "NCCL_PROTO",
        "NCCL_NVLS_ENABLE",
        "NCCL_COLLNET_ENABLE",
    }
)
ENV_PREFIXES = ("NVTE_", "TORCH_CUDNN_", "CUDNN_", "CUBLAS_", "MEGATRON_")
# Never recorded, whatever the allowlist says.
SECRET_WORDS = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)


def numeric_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The allowlisted variables of `environ` that change numerics or layout."""
    out: dict[str, str] = {}
    for name, value in environ.items():
        if SECRET_WORDS.search(name):
            continue
        if name in ENV_NAMES or name.startswith(ENV_PREFIXES):
            out[name] = value
    return dict(sorted(out.items()))


def _int(environ: Mapping[str, str], name: str) -> int | None:
    value = environ.get(name, "")
    return int(value) if value.isdigit() else None


def launcher_of(environ: Mapping[str, str], world_size: int) -> dict[str, Any]:
    """The launcher that started this process and its layout: world size, processes per
    node and nodes."""
    if "TORCHELASTIC_RUN_ID" in environ or "LOCAL_WORLD_SIZE" in environ:
        name, local = "torchrun", _int(environ, "LOCAL_WORLD_SIZE")
    elif "SLURM_PROCID" in environ:
        name, local = "srun", _int(environ, "SLURM_NTASKS_PER_NODE")
    elif "OMPI_COMM_WORLD_SIZE" in environ:
        name, local = "mpirun", _int(environ, "OMPI_COMM_WORLD_LOCAL_SIZE")
    else:
        name, local = "python", 1
    local = local or world_size
    return {
        "name": name,
        "world_size": world_size,
        "local_world_size": local,
        "nnodes": max(1, -(-world_size // max(1, local))),
    }


def program_argv() -> list[str]:
    """What follows the interpreter: its options, `-m module` or the script, the script's
    arguments (the launcher's own options are not part of it)."""
    orig = list(getattr(sys, "orig_argv", []))[1:]
    if not orig:
        return list(sys.argv)
    # Interpreter options the launcher added (torchrun's -u) say nothing about the program.
    while orig and orig[0] in ("-u", "-B"):
        orig.pop(0)
    return orig


def script_path() -> str:
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return os.path.abspath(path) if path else ""


def launch_record(world_size: int, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    return {
        "argv": program_argv(),
        "executable": sys.executable,
        "script": script_path(),
        "cwd": os.getcwd(),
        "launcher": launcher_of(env, world_size),
        "env": numeric_env(env),
    }
