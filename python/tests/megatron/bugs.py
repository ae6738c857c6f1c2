"""Bugs injected into Megatron-core's own code path: while one `RowParallelLinear` runs its
forward, the reduction function Megatron-core's `tensor_parallel.layers` calls
(`reduce_from_tensor_model_parallel_region`, or `reduce_scatter_to_sequence_parallel_region`
under sequence parallelism) is replaced by a wrong one. Everything else, the backward
included, is Megatron-core's.

- `drop_reduce`: `decoder.layers.0.mlp.linear_fc2` skips its reduction over tp (each rank
  keeps its own partial sum; under sequence parallelism its own slice of it);
- `scale_rank`: `decoder.layers.1.self_attention.linear_proj` on tp rank 1 contributes its
  partial sum scaled by 1 + 1e-3 (an error a few times the fp32 round-off floor);
- `bias_before_reduce`: `decoder.layers.0.self_attention.linear_proj` (skip-bias-add) adds
  its bias to every rank's partial sum before the reduction, as well as returning it.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

from megatron.core.tensor_parallel import layers

BUGS = {
    "drop_reduce": "decoder.layers.0.mlp.linear_fc2",
    "scale_rank": "decoder.layers.1.self_attention.linear_proj",
    "bias_before_reduce": "decoder.layers.0.self_attention.linear_proj",
}
SCALE = 1.0 + 1e-3
REDUCERS = (
    "reduce_from_tensor_model_parallel_region",
    "reduce_scatter_to_sequence_parallel_region",
)


@contextlib.contextmanager
def _reducers(wrong: Callable[[Callable[..., Any], torch.Tensor, Any], torch.Tensor]) -> Iterator:
    saved = {name: getattr(layers, name) for name in REDUCERS}
    for name, original in saved.items():
        setattr(
            layers,
            name,
            lambda x, group=None, _o=original, **kw: wrong(
                lambda y: _o(y, group=group, **kw), x, group
            ),
        )
    try:
        yield
    finally:
        for name, original in saved.items():
            setattr(layers, name, original)


def _drop(reduce: Callable, x: torch.Tensor, group: Any) -> torch.Tensor:
    out = reduce(torch.zeros_like(x))  # the shape the reduction would give
    if out.shape == x.shape:
        return x
    rank, size = torch.distributed.get_rank(group), torch.distributed.get_world_size(group)
    return x.chunk(size, dim=0)[rank].contiguous()


def _scale(reduce: Callable, x: torch.Tensor, group: Any) -> torch.Tensor:
    return reduce(x * SCALE if torch.distributed.get_rank(group) == 1 else x)


def _wrong(name: str, module: torch.nn.Module) -> Callable:
    if name == "drop_reduce":
        return _drop
    if name == "scale_rank":
        return _scale
    return lambda reduce, x, group: reduce(x + module.bias)


def inject(name: str, model: torch.nn.Module) -> None:
    if name == "none":
        return
    if name not in BUGS:
        raise ValueError(f"unknown bug {name!r}; known: {', '.join(BUGS)}")
    module = model.get_submodule(BUGS[name])
    wrong = _wrong(name, module)
    original = type(module).forward

    def forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        with _reducers(wrong):
            return original(self, *args, **kwargs)

    module.forward = types.MethodType(forward, module)
