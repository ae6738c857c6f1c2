"""What the named dimensions of a `DeviceMesh` mean for the job's parallel layout.

torchtitan-style jobs build one mesh, e.g. `init_device_mesh("cuda", (dp, tp),
mesh_dim_names=("dp_shard", "tp"))`, and hand its sub-meshes to `parallelize_module`
(`mesh["tp"]`) and `fully_shard` (`mesh["dp_shard"]`). A dimension's role is read from its
name: `tp` (tensor/sequence parallel), `dp*` / `fsdp` / `hsdp` (data parallel: replicate and
shard dimensions multiply), `cp` (context parallel), `pp` (pipeline stage). A DTensor on a
sub-mesh only knows its own dimensions; the others are the job's "outer" coordinates that
`mesh_compose` adds to its placement.
"""

from __future__ import annotations

from typing import Any

ROLES = ("tp", "dp", "cp", "pp")


def role_of(name: str) -> str:
    """The role of a mesh dimension named `name`; ValueError for a name it cannot read."""
    n = name.lower()
    if n in ("tp", "tensor", "sp") or n.startswith("tp_") or n.endswith("_tp"):
        return "tp"
    if n.startswith("dp") or n in ("fsdp", "hsdp", "ddp", "data", "replicate", "shard"):
        return "dp"
    if n in ("cp", "context") or n.startswith("cp_"):
        return "cp"
    if n in ("pp", "pipeline") or n.startswith("pp_"):
        return "pp"
    raise ValueError(
        f"ttrace: mesh dimension {name!r} is not a known parallel dimension (tp, dp*, fsdp, "
        "hsdp, cp, pp); pass Tracer(parallel=ttrace.capture.ParallelInfo(...))"
    )


def mesh_roles(mesh: Any) -> list[str]:
    """The role of each dimension of a mesh with named dimensions."""
    names = mesh.mesh_dim_names
    if not names:
        raise ValueError("ttrace: the device mesh has no mesh_dim_names to read roles from")
    return [role_of(n) for n in names]


def mesh_coords(mesh: Any) -> dict[str, tuple[int, int]]:
    """{role: (size, this rank's index)} over a named mesh; dimensions of one role (HSDP's
    replicate and shard) combine row-major in mesh order."""
    coord = mesh.get_coordinate()
    if coord is None:
        raise ValueError("ttrace: this rank is not part of the device mesh")
    out: dict[str, tuple[int, int]] = {}
    for dim, role in enumerate(mesh_roles(mesh)):
        size, index = out.get(role, (1, 0))
        out[role] = (size * mesh.size(dim), index * mesh.size(dim) + coord[dim])
    return out


def covered_roles(mesh: Any, sizes: dict[str, int], world_size: int) -> set[str]:
    """The job dimensions a DTensor's mesh spans: read from its names, else (an unnamed
    mesh) every dimension when it spans the world, else the one dimension of its size."""
    if mesh.mesh_dim_names:
        return set(mesh_roles(mesh))
    if mesh.size() == world_size:
        return set(ROLES)
    matching = [r for r in ROLES if sizes.get(r, 1) == mesh.size() and mesh.size() > 1]
    if mesh.ndim == 1 and len(matching) == 1:
        return {matching[0]}
    raise ValueError(
        f"ttrace: a DTensor on an unnamed {mesh.size()}-rank mesh in a {world_size}-rank job "
        f"(sizes {sizes}): name the mesh dimensions (init_device_mesh(..., mesh_dim_names=...))"
    )
