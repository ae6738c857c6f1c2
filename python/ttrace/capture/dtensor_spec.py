"""How a DTensor argument of a call was laid out (its device mesh and placements), so a
replay hands the module a DTensor again: torch's parallel styles and torchtitan pass
activations between modules as DTensors, and a module fed a plain tensor there mixes the two
and fails. A relaunch from the bundles finds the mesh again among the job's own meshes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .dtensor_placement import is_dtensor


@dataclass(frozen=True)
class DTensorSpec:
    mesh: Any  # a DeviceMesh
    placements: tuple[Any, ...]

    @classmethod
    def of(cls, value: torch.Tensor) -> DTensorSpec | None:
        if not is_dtensor(value):
            return None
        return cls(value.device_mesh, tuple(value.placements))  # type: ignore[attr-defined]

    def wrap(self, local: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
        """`local` (this rank's piece) as the DTensor the module was called with."""
        from torch.distributed.tensor import DTensor

        return DTensor.from_local(
            local, self.mesh, self.placements, run_check=False, shape=torch.Size(shape),
            stride=_contiguous_stride(shape),
        )  # fmt: skip

    def encode(self) -> dict[str, Any]:
        return {
            "mesh": self.mesh.mesh.tolist(),
            "dims": list(self.mesh.mesh_dim_names or []),
            "placements": [_encode_placement(p) for p in self.placements],
        }


def _contiguous_stride(shape: tuple[int, ...]) -> tuple[int, ...]:
    stride, acc = [], 1
    for n in reversed(shape):
        stride.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(stride))


def _encode_placement(p: Any) -> dict[str, Any]:
    from torch.distributed.tensor import Partial, Replicate, Shard

    if isinstance(p, Shard):
        return {"shard": int(p.dim)}
    if isinstance(p, Replicate):
        return {"replicate": True}
    if isinstance(p, Partial):
        return {"partial": str(p.reduce_op)}
    raise ValueError(f"a DTensor placement {p!r} the bundle cannot hold")


def _decode_placement(data: Mapping[str, Any]) -> Any:
    from torch.distributed.tensor import Partial, Replicate, Shard

    if "shard" in data:
        return Shard(int(data["shard"]))
    if "replicate" in data:
        return Replicate()
    if "partial" in data:
        return Partial(str(data["partial"]))
    raise ValueError(f"an unknown DTensor placement {dict(data)!r}")


def job_meshes(roots: Iterable[nn.Module]) -> list[Any]:
    """The device meshes the job's parameters and buffers live on, with their named
    sub-meshes (an activation on the TP mesh of a parameter's (dp, tp) mesh)."""
    found: dict[int, Any] = {}
    for root in roots:
        for t in [*root.parameters(), *root.buffers()]:
            if is_dtensor(t):
                mesh = t.device_mesh  # type: ignore[attr-defined]
                found.setdefault(id(mesh), mesh)
    meshes = list(found.values())
    for mesh in list(meshes):
        for name in mesh.mesh_dim_names or ():
            meshes.append(mesh[name])
    return meshes


def decode_spec(data: Mapping[str, Any], meshes: Iterable[Any]) -> DTensorSpec | None:
    """The recorded layout on the job's own mesh of the same ranks and dimension names;
    None when the relaunch holds no such mesh (the call is then not replayable)."""
    for mesh in meshes:
        same_ranks = mesh.mesh.tolist() == data["mesh"]
        if same_ranks and list(mesh.mesh_dim_names or []) == list(data["dims"]):
            return DTensorSpec(mesh, tuple(_decode_placement(p) for p in data["placements"]))
    return None
