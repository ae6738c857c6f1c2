"""What may differ between two runs of the same layout: software versions, devices, the
backend switches and environment variables that select kernels, and per captured module the
kernel it ran, as far as that is cheap to know (docs/bundle-format.md, `environment`).

Written for both roles: a reference and a candidate captured with another torch, another
framework release, another GPU or another attention kernel compare with the same layout, and
`ttrace diff` names what differs and may call the rounding of a module whose kernel changed
"drift" (docs/cross-version.md). A module's kernel is its class (qualified name and the
SHA-256 of the class's source file) and a tag the job may declare: the attribute
`ttrace_kernel` (a string) on the module, set directly or by `declare_kernel`, for a kernel
chosen at run time that no source file records (a flag, an environment variable).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import logging
import os
import platform
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .code_fingerprint import code_fingerprint
from .launch_record import numeric_env

log = logging.getLogger("ttrace.capture")

KERNEL_ATTRIBUTE = "ttrace_kernel"


def declare_kernel(module: nn.Module, tag: str) -> None:
    """Declares which kernel `module` runs (e.g. "attention=flash-v3"): recorded per module,
    so a comparison with a run of another tag may call its rounding drift."""
    if not isinstance(tag, str) or not tag:
        raise TypeError(f"a kernel tag is a non-empty string, got {tag!r}")
    setattr(module, KERNEL_ATTRIBUTE, tag)


@cache
def _file_sha256(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


@cache
def _package_of(top_level: str) -> str:
    dists = importlib.metadata.packages_distributions().get(top_level, [])
    return dists[0] if dists else ""


def model_class(module: nn.Module) -> type:
    """The class the model's code defines. FSDP2's `fully_shard` swaps a module's class for
    a generated subclass (`FSDP<Name>`, of `FSDPModule` and the class) that runs the same
    kernels: recorded as it is, every sharded module of a candidate would read as another
    kernel from torch's package, and a single-process reference's comparison would allow
    drift there (and hide divergences as drift)."""
    cls = type(module)
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # a torch without FSDP2
        return cls
    if not issubclass(cls, FSDPModule):
        return cls
    return next((c for c in cls.__mro__ if not issubclass(c, FSDPModule)), cls)


def kernel_entry(module: nn.Module) -> dict[str, str]:
    """{"class", "source_sha256", "package"?, "tag"?} of one module."""
    cls = model_class(module)
    try:
        path = inspect.getsourcefile(cls) or ""
    except (TypeError, OSError):
        path = ""
    entry = {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "source_sha256": _file_sha256(path) if path else "",
    }
    package = _package_of(cls.__module__.split(".")[0])
    if package:
        entry["package"] = package
    tag = getattr(module, KERNEL_ATTRIBUTE, None)
    if isinstance(tag, str) and tag:
        entry["tag"] = tag
    return entry


def _call(getter: Callable[[], Any]) -> Any:
    try:
        return getter()
    except Exception:  # an older or newer torch without the switch: not recorded
        return None


def backend_switches() -> dict[str, Any]:
    """torch's switches that select kernels or their precision (None when this torch has no
    such switch)."""
    cuda, cudnn = torch.backends.cuda, torch.backends.cudnn
    switches = {
        "float32_matmul_precision": _call(torch.get_float32_matmul_precision),
        "deterministic_algorithms": _call(torch.are_deterministic_algorithms_enabled),
        "cuda.matmul.allow_tf32": _call(lambda: cuda.matmul.allow_tf32),
        "cuda.matmul.allow_bf16_reduced_precision_reduction": _call(
            lambda: cuda.matmul.allow_bf16_reduced_precision_reduction
        ),
        "cuda.matmul.allow_fp16_reduced_precision_reduction": _call(
            lambda: cuda.matmul.allow_fp16_reduced_precision_reduction
        ),
        "cuda.flash_sdp": _call(cuda.flash_sdp_enabled),
        "cuda.mem_efficient_sdp": _call(cuda.mem_efficient_sdp_enabled),
        "cuda.math_sdp": _call(cuda.math_sdp_enabled),
        "cuda.cudnn_sdp": _call(cuda.cudnn_sdp_enabled),
        "cudnn.enabled": _call(lambda: cudnn.enabled),
        "cudnn.allow_tf32": _call(lambda: cudnn.allow_tf32),
        "cudnn.deterministic": _call(lambda: cudnn.deterministic),
        "cudnn.benchmark": _call(lambda: cudnn.benchmark),
        "intra_op_threads": _call(torch.get_num_threads),
    }
    return {k: v for k, v in switches.items() if v is not None}


def device_name(roots: Sequence[nn.Module]) -> str:
    """The accelerator's name ("NVIDIA H100 80GB HBM3"), or "cpu" with the machine type."""
    param = next((p for root in roots for p in root.parameters()), None)
    if param is not None and param.device.type == "cuda":
        return torch.cuda.get_device_name(param.device)
    return f"cpu ({platform.machine()})" if platform.machine() else "cpu"


def rank_environment(roots: Sequence[nn.Module], names: Any, selected: Iterable[nn.Module]) -> dict:
    """This rank's part; rank 0 merges the ranks' parts (`merge_environments`)."""
    versions = dict(code_fingerprint(roots)["versions"])
    if torch.version.cuda:
        versions["cuda"] = str(torch.version.cuda)
    cudnn = _call(torch.backends.cudnn.version) if torch.cuda.is_available() else None
    if cudnn:
        versions["cudnn"] = str(cudnn)
    return {
        "versions": versions,
        "devices": [device_name(roots)],
        "backends": backend_switches(),
        "env": numeric_env(os.environ),
        "kernels": {names.name(m): kernel_entry(m) for m in selected},
    }


def safe_rank_environment(tracer: Any) -> dict | None:
    """`rank_environment` of a tracer; None (and a warning) when it cannot be made: the record
    serves the report only and must never fail a capture."""
    try:
        return rank_environment(tracer.roots, tracer.names, tracer.selected)
    except Exception as exc:
        log.warning("ttrace: no environment record on rank %d: %r", tracer.rank, exc)
        return None


def merge_environments(parts: Sequence[dict | None]) -> dict | None:
    """The manifest's `environment` (rank 0): rank 0's versions, switches and variables (the
    ranks of one job share them), every rank's devices, every rank's modules' kernels (pipeline
    stages hold different modules). None when no rank sent a part."""
    present = [p for p in parts if p]
    if not present:
        return None
    first = present[0]
    kernels: dict[str, Any] = {}
    devices: set[str] = set()
    for part in present:
        kernels.update(part.get("kernels", {}))
        devices.update(part.get("devices", []))
    return {
        "versions": dict(sorted(first.get("versions", {}).items())),
        "devices": sorted(devices),
        "backends": dict(sorted(first.get("backends", {}).items())),
        "env": dict(first.get("env", {})),
        "kernels": dict(sorted(kernels.items())),
    }
