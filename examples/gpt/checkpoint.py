"""A real starting point: the example's training state saved once with torch distributed
checkpoint (DCP) and loaded, resharded, into any tensor/data-parallel layout.

The state dict is keyed by each parameter's logical (layout-independent) name. A
tensor-parallel parameter (`tensor_model_parallel`, split along `partition_dim`) is a DTensor
on the tensor-parallel mesh with `Shard(partition_dim)`; everything else is a plain tensor,
which DCP treats as replicated (data-parallel replicas write it once). On load, DCP reads
only the slice each rank's DTensor covers, so a checkpoint saved by one process loads into
TP2 and one saved by TP2 x DP2 loads into one process.

What is saved: parameters, the optimizer's fp32 master values and Adam moments and its step
count, the learning-rate schedule's step, the CPU random state, and the data position (the
next iteration's index into the synthetic data stream).
"""

from __future__ import annotations

import contextlib
import hashlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Shard

from .local_optimizer import LocalAdam
from .parallel_state import ParallelState

METADATA_FILE = ".metadata"  # DCP's FileSystemWriter writes the global plan here


class ResumeError(Exception):
    """A layout or optimizer this example cannot save or load through DCP."""


@dataclass(frozen=True)
class Position:
    """Where a resumed run continues: optimizer steps taken, LR schedule step, data position."""

    step: int
    lr_step: int
    data_iteration: int


def _mesh(ps: ParallelState) -> DeviceMesh | None:
    if ps.cfg.tp == 1:
        return None
    return DeviceMesh.from_group(ps.group("tp"), "cpu")


def _named_params(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    return list(model.named_parameters())


def _shardable(t: torch.Tensor, p: nn.Parameter, mesh: DeviceMesh | None) -> Any:
    """`t` (a local tensor shaped like `p`) as DCP should see it: a TP shard as a DTensor."""
    if mesh is None or not getattr(p, "tensor_model_parallel", False):
        return t
    return DTensor.from_local(t, mesh, [Shard(int(p.partition_dim))], run_check=False)


@contextlib.contextmanager
def _single_process_quiet() -> Iterator[bool]:
    """Yields whether this is one process without torch.distributed (DCP's no_dist mode);
    then DCP's warning that it assumes exactly that is expected and silenced."""
    no_dist = not dist.is_initialized()
    with warnings.catch_warnings():
        if no_dist:
            warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield no_dist


def check_supported(ps: ParallelState, optimizer: object) -> None:
    """Pipeline stages name their layers locally and the distributed optimizer keeps flat
    slices: neither maps to logical names here, so they are refused, not saved wrongly."""
    if ps.cfg.pp > 1 or ps.cfg.cp > 1 or ps.cfg.ep > 1:
        raise ResumeError(
            f"--save-checkpoint/--resume support tensor and data parallelism only "
            f"(this run has pp={ps.cfg.pp}, cp={ps.cfg.cp}, ep={ps.cfg.ep})"
        )
    if not isinstance(optimizer, LocalAdam):
        raise ResumeError("--save-checkpoint/--resume need the non-distributed optimizer")


def state_dict(
    model: nn.Module, optimizer: LocalAdam, ps: ParallelState, position: Position
) -> dict[str, Any]:
    """The DCP state dict: live tensors (load fills them in place) plus scalar tensors."""
    mesh = _mesh(ps)
    sd: dict[str, Any] = {}
    named = _named_params(model)
    for (name, p), master, m, v in zip(
        named, optimizer.master, optimizer.exp_avg, optimizer.exp_avg_sq, strict=True
    ):
        sd[f"model/{name}"] = _shardable(p.data, p, mesh)
        sd[f"optim/master/{name}"] = _shardable(master, p, mesh)
        sd[f"optim/exp_avg/{name}"] = _shardable(m, p, mesh)
        sd[f"optim/exp_avg_sq/{name}"] = _shardable(v, p, mesh)
    sd["optim/step"] = torch.tensor(position.step, dtype=torch.int64)
    sd["lr_schedule/step"] = torch.tensor(position.lr_step, dtype=torch.int64)
    sd["data/iteration"] = torch.tensor(position.data_iteration, dtype=torch.int64)
    # The example's ranks share one CPU random stream (nothing is drawn per rank), so one
    # state serves every layout.
    sd["rng/cpu"] = torch.get_rng_state()
    return sd


def save(
    path: Path, model: nn.Module, optimizer: LocalAdam, ps: ParallelState, position: Position
) -> None:
    check_supported(ps, optimizer)
    sd = state_dict(model, optimizer, ps, position)
    with _single_process_quiet() as no_dist:
        dcp.save(sd, checkpoint_id=str(path), no_dist=no_dist)
    if dist.is_initialized():
        dist.barrier()


def load(path: Path, model: nn.Module, optimizer: LocalAdam, ps: ParallelState) -> Position:
    """Fill model and optimizer in place from `path`, resharded to this rank's layout; set the
    CPU random state; return the position to continue from."""
    check_supported(ps, optimizer)
    if not (path / METADATA_FILE).is_file():
        raise ResumeError(f"{path}: no DCP checkpoint ({METADATA_FILE} missing)")
    sd = state_dict(model, optimizer, ps, Position(0, 0, 0))
    with torch.no_grad(), _single_process_quiet() as no_dist:
        dcp.load(sd, checkpoint_id=str(path), no_dist=no_dist)
    optimizer.step_count = int(sd["optim/step"])
    torch.set_rng_state(sd["rng/cpu"])
    return Position(int(sd["optim/step"]), int(sd["lr_schedule/step"]), int(sd["data/iteration"]))


def metadata_digest(path: Path) -> str:
    """SHA-256 of the checkpoint's DCP metadata: equal for two runs that loaded the same one."""
    return hashlib.sha256((path / METADATA_FILE).read_bytes()).hexdigest()


def start_record(path: Path, position: Position) -> dict[str, Any]:
    """What the capture records in the manifest's `start` section."""
    return {
        "kind": "torch-dcp",
        "checkpoint": str(path),
        "step": position.step,
        "metadata_sha256": metadata_digest(path),
    }
