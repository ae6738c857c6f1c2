"""Identical starting weights for the reference and every candidate layout.

Each full logical parameter is drawn from its own generator, seeded from its canonical name
and the run seed, then this rank keeps its shard (by the same placement inference used for
capture). So a parameter's values do not depend on the parallel layout, on the order
parameters are created, or on which pipeline stage or expert-parallel rank holds it. A
parameter shared by two modules is seeded once, under its first name; a copy annotated with
an `alias` (a tied embedding on the last stage) is seeded under the alias.

A parameter whose tensor-parallel layout nothing declares (no `tensor_model_parallel`
attribute, not a DTensor, not annotated: a per-head offset built by hand, say) is taken as a
replica, unless `reference=` names the reference bundle: then it is initialized by what it
is, its local shape against the reference's full shape (the one dimension that is tp times
larger is split over tp). That it was undeclared is what the comparison then reports.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn

from ttrace.bundle import Placement

from .annotate import param_annotation_of
from .call_structure import CallStructure
from .dtensor_placement import dtensor_placement, is_dtensor
from .inference import PlacementInference
from .megatron_parallel import megatron_parallel
from .naming import canonical_names, unwrap
from .parallel_info import ParallelInfo
from .shard_math import slice_full

InitFn = Callable[[str, tuple[int, ...], torch.Generator], torch.Tensor]
PlacementFn = Callable[[str, nn.Parameter], Placement]


def param_seed(name: str, seed: int) -> int:
    digest = hashlib.sha256(name.encode()).digest()
    return (int.from_bytes(digest[:8], "little") ^ int(seed)) & ((1 << 63) - 1)


def default_init(name: str, shape: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
    """Matrices N(0, 1/fan_in); vectors named *bias ~ 0.1*N(0,1); other vectors (norm
    weights) 1 + 0.1*N(0,1) so that their replicas are distinguishable from defaults."""
    noise = torch.randn(shape, generator=g, dtype=torch.float32)
    if len(shape) >= 2:
        return noise / shape[-1] ** 0.5
    if name.endswith("bias"):
        return 0.1 * noise
    return 1.0 + 0.1 * noise


def reference_shapes(reference: str | Path) -> dict[str, tuple[int, ...]]:
    """Full shapes of the reference bundle's parameters by canonical name, from every rank
    file: a distributed reference's rank 0 need not hold every parameter (a pipeline stage
    holds its own layers only)."""
    import h5py

    shapes: dict[str, tuple[int, ...]] = {}

    def visit(_: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset) and obj.attrs.get("kind") in ("parameter", b"parameter"):
            module, index = (
                str(obj.attrs[k], "utf-8") if isinstance(obj.attrs[k], bytes) else str(obj.attrs[k])
                for k in ("module", "index")
            )
            shapes[f"{module}.{index}" if module else index] = tuple(
                int(n) for n in obj.attrs["global_shape"]
            )

    files = sorted(Path(reference).glob("rank-*.h5"))
    if not files:
        raise FileNotFoundError(f"{reference}: no rank files (rank-*.h5): not a trace bundle")
    for path in files:
        with h5py.File(path, "r") as f:
            f.visititems(visit)
    return shapes


def undeclared_split(
    local: tuple[int, ...], full: tuple[int, ...] | None, info: ParallelInfo
) -> Placement | None:
    """This rank's piece of a parameter nothing declares, when the reference's full shape
    says it is split over tp: exactly one dimension tp times the local one."""
    if full is None or info.tp == 1 or len(full) != len(local) or full == local:
        return None
    dims = [d for d, (n, m) in enumerate(zip(local, full, strict=True)) if n != m]
    if len(dims) != 1 or full[dims[0]] != local[dims[0]] * info.tp:
        return None
    return Placement.split(full, dims[0], info.tp_rank, info.tp)


def seeded_init(
    model: nn.Module | Sequence[nn.Module],
    seed: int,
    placement_fn: PlacementFn | None = None,
    *,
    parallel: ParallelInfo | None = None,
    init_fn: InitFn | None = None,
    reference: str | Path | None = None,
) -> dict[str, Placement]:
    """Initialize every parameter from (canonical name, seed); returns the placements used.
    `reference`: the reference bundle, whose shapes decide the layout of parameters nothing
    declares."""
    roots = [unwrap(m) for m in (list(model) if isinstance(model, Sequence) else [model])]
    names = canonical_names(roots)
    # Megatron-core layers know their tensor-parallel group: no ParallelInfo needed.
    info = parallel or megatron_parallel(roots, tp_only=True) or ParallelInfo.single()
    inference = PlacementInference(names, info, CallStructure())
    init = init_fn or default_init
    full_shapes = reference_shapes(reference) if reference is not None else {}
    used: dict[str, Placement] = {}
    done: set[nn.Parameter] = set()
    for module, mname in names.names.items():
        for pname, p in module.named_parameters(recurse=False):
            if p in done:
                continue  # shared by two modules: seeded under its first name
            done.add(p)
            ann = param_annotation_of(p)
            if ann is not None and ann.alias is not None:
                full_name = ann.alias  # a tied copy starts as the tensor it copies
            else:
                full_name = pname if names.is_root(module) else f"{mname}.{pname}"
            if is_dtensor(p):
                local_target, placement = dtensor_placement(p)
            else:
                local_target = p
                placement = (
                    placement_fn(full_name, p)
                    if placement_fn is not None
                    else inference.param_placement(p, p.shape, module, "parameter")[0]
                )
                declared = hasattr(p, "tensor_model_parallel") or ann is not None
                split = (
                    None
                    if declared
                    else undeclared_split(tuple(p.shape), full_shapes.get(full_name), info)
                )
                placement = split if split is not None and placement_fn is None else placement
            g = torch.Generator().manual_seed(param_seed(full_name, seed))
            full = init(full_name, tuple(placement.global_shape), g)
            local = slice_full(full, placement, tuple(local_target.shape))
            with torch.no_grad():
                local_target.copy_(local.to(local_target.dtype))
            used[full_name] = placement
    return used
