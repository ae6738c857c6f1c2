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

Pipeline bugs, in Megatron-core's pipeline code:
- `stale_activation`: the stage after the first consumes a stale activation: each forward
  receive after the first of a step hands over the previous micro-batch's activation (the
  receive buffer is filled from the last one, as a missing wait or a reused buffer would);
- `loss_not_averaged`: the last stage does not divide micro-batch 1's loss by the number of
  micro-batches (`forward_step_calc_loss`), so its gradients are that many times too large.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

from megatron.core.pipeline_parallel import p2p_communication, schedules
from megatron.core.tensor_parallel import layers

BUGS = {
    "drop_reduce": "decoder.layers.0.mlp.linear_fc2",
    "scale_rank": "decoder.layers.1.self_attention.linear_proj",
    "bias_before_reduce": "decoder.layers.0.self_attention.linear_proj",
}
PIPELINE_BUGS = ("stale_activation", "loss_not_averaged")
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


def _stale_activation() -> None:
    original = p2p_communication.P2PCommunicator._communicate
    last: list[torch.Tensor] = []

    def communicate(self: Any, **kwargs: Any) -> Any:
        prev, nxt, reqs = original(self, **kwargs)
        if prev is not None and reqs is None:
            if last and last[0].shape == prev.shape:
                fresh = prev.detach().clone()
                with torch.no_grad():
                    prev.copy_(last[0])
                last[0] = fresh
            else:
                last[:] = [prev.detach().clone()]
        return prev, nxt, reqs

    p2p_communication.P2PCommunicator._communicate = communicate


def _loss_not_averaged() -> None:
    original = schedules.forward_step_calc_loss
    calls = [0]

    def calc_loss(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] % 2 == 0:  # micro-batch 1 of 2: divided by 1, not by 2
            args = (*args[:6], 1, *args[7:])
        return original(*args, **kwargs)

    schedules.forward_step_calc_loss = calc_loss


def inject(name: str, chunks: list[torch.nn.Module]) -> None:
    if name == "none":
        return
    if name == "stale_activation":
        return _stale_activation()
    if name == "loss_not_averaged":
        return _loss_not_averaged()
    if name not in BUGS:
        raise ValueError(f"unknown bug {name!r}; known: {', '.join([*BUGS, *PIPELINE_BUGS])}")
    holders = [c for c in chunks if BUGS[name] in dict(c.named_modules())]
    if not holders:
        return  # another pipeline stage holds the module
    module = holders[0].get_submodule(BUGS[name])
    wrong = _wrong(name, module)
    original = type(module).forward

    def forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        with _reducers(wrong):
            return original(self, *args, **kwargs)

    module.forward = types.MethodType(forward, module)


def loss_of(output: torch.Tensor) -> torch.Tensor:
    """The micro-batch's loss from the model's per-token losses."""
    return output.float().mean()
