"""Where a parameter's `main_grad` view lives, so that a relaunch can make the same view.

Distributed optimizers (Megatron's, the example's) make `param.main_grad` a view of one flat
gradient buffer, which the optimizer reads its gradients from. A relaunch builds the same
optimizer, so the same buffer exists again: the capture records the path from the optimizer
(or a model root) to the buffer and the view's offset in it, and the relaunch takes the view
there, so a step replay can feed the reference's gradient through it as the live agent does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import nn

_DEPTH = 3
Step = str | int


def _children(obj: Any) -> Iterator[tuple[Step, Any]]:
    if isinstance(obj, list | tuple):
        yield from enumerate(obj)
    elif isinstance(obj, dict):
        yield from ((k, v) for k, v in obj.items() if isinstance(k, str))
    elif hasattr(obj, "__dict__") and not isinstance(obj, nn.Module | torch.Tensor | type):
        yield from vars(obj).items()


def _search(obj: Any, ptr: int, path: list[Step], depth: int) -> list[Step] | None:
    for step, child in _children(obj):
        if isinstance(child, torch.Tensor):
            same = child.untyped_storage().data_ptr() == ptr
            if same and child.dim() == 1 and child.is_contiguous():
                return [*path, step]
        elif depth < _DEPTH:
            found = _search(child, ptr, [*path, step], depth + 1)
            if found is not None:
                return found
    return None


def locate_view(main: torch.Tensor, owners: Mapping[str, Any]) -> dict[str, Any] | None:
    """{"owner", "path", "offset"} of the flat buffer `main` is a view of; None if none of
    the owners (the optimizer, the model roots) holds it within a few attributes."""
    if main._base is None:
        return None
    ptr = main.untyped_storage().data_ptr()
    for name, owner in owners.items():
        start = vars(owner) if isinstance(owner, nn.Module) else owner
        path = _search(start, ptr, [], 1)
        if path is not None:
            base = follow(owner, path)
            return {
                "owner": name,
                "path": path,
                "offset": main.storage_offset() - base.storage_offset(),
            }
    return None


def follow(owner: Any, path: list[Step]) -> torch.Tensor:
    obj = vars(owner) if isinstance(owner, nn.Module) else owner
    for step in path:
        obj = obj[step] if isinstance(obj, list | tuple | dict) else getattr(obj, str(step))
    if not isinstance(obj, torch.Tensor):
        raise TypeError(f"{'.'.join(map(str, path))} is a {type(obj).__name__}, not a tensor")
    return obj


def make_view(p: torch.Tensor, owner: Any, record: Mapping[str, Any]) -> torch.Tensor | None:
    """The view of `p`'s shape at the recorded offset of the buffer; None when the relaunch's
    buffer cannot hold it."""
    try:
        base = follow(owner, list(record["path"]))
    except (KeyError, IndexError, AttributeError, TypeError):
        return None
    offset = int(record["offset"])
    if base.dim() != 1 or offset < 0 or offset + p.numel() > base.numel():
        return None
    return base[offset : offset + p.numel()].view(p.shape)
