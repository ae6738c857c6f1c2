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

Mixture-of-experts bugs (`--moe`), in Megatron-core's own router, dispatcher and DDP:
- `router_no_renorm`: `decoder.layers.0.mlp.router` on rank 1 returns its top-k
  probabilities without renormalizing them (the softmax over all experts, masked);
- `unpermute_mismatch`: the token dispatcher of `decoder.layers.0.mlp` on rank 1
  un-permutes its combined tokens with two entries of its permutation mapping swapped;
- `expert_scale`: on rank 1, the first local expert's `linear_fc2` (global expert 2 under
  EP2) scales its output by 1 + 1e-2 (a bug in one expert's own code);
- `expert_grad_not_reduced` (a DDP bug, `inject_ddp`): the expert-parallel gradient buckets
  are scaled but never all-reduced over expert data parallelism.
Activation recompute bug, in Megatron-core's `CheckpointFunction` (full recompute):
- `recompute_rng_not_restored`: the backward recomputes a checkpointed layer without first
  restoring the generator states (CPU, CUDA and the model-parallel tracker's) its forward
  saved: with dropout, the recompute draws other masks than the forward did.
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
from megatron.core.tensor_parallel import random as mp_random

BUGS = {
    "drop_reduce": "decoder.layers.0.mlp.linear_fc2",
    "scale_rank": "decoder.layers.1.self_attention.linear_proj",
    "bias_before_reduce": "decoder.layers.0.self_attention.linear_proj",
}
MOE_BUGS = {
    "router_no_renorm": "decoder.layers.0.mlp.router",
    "unpermute_mismatch": "decoder.layers.0.mlp",
    "expert_scale": "decoder.layers.0.mlp.experts.local_experts.0.linear_fc2",
}
DDP_BUGS = ("expert_grad_not_reduced",)
BUGGY_RANK = 1
PIPELINE_BUGS = ("stale_activation", "loss_not_averaged")
RECOMPUTE_BUGS = ("recompute_rng_not_restored",)
SCALE = 1.0 + 1e-3
EXPERT_SCALE = 1.0 + 1e-2
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


def _router_no_renorm(router: torch.nn.Module) -> None:
    original = router.routing

    def routing(logits: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        probs, routing_map = original(logits, *args, **kwargs)
        full = torch.softmax(logits.reshape(probs.shape).float(), dim=-1).to(probs.dtype)
        return full * routing_map, routing_map

    router.routing = routing


def _unpermute_mismatch(layer: torch.nn.Module) -> None:
    dispatcher = layer.token_dispatcher
    original = dispatcher.combine_postprocess

    def combine_postprocess(tokens: torch.Tensor) -> torch.Tensor:
        mapping = dispatcher.reversed_local_input_permutation_mapping
        rows = torch.nonzero(mapping != mapping[0]).flatten()
        if rows.numel():  # swap the first row with the first row of another token
            mapping = mapping.clone()
            mapping[0], mapping[rows[0]] = mapping[rows[0]].clone(), mapping[0].clone()
            dispatcher.reversed_local_input_permutation_mapping = mapping
        return original(tokens)

    dispatcher.combine_postprocess = combine_postprocess


def _expert_scale(linear: torch.nn.Module) -> None:
    original = linear.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        output, bias = original(*args, **kwargs)
        return output * EXPERT_SCALE, bias

    linear.forward = forward


def inject_ddp(name: str, ddp: Any) -> None:
    """`expert_grad_not_reduced`: the expert buckets' all-reduce over expert-DP is skipped
    (their gradients are still scaled as if it ran)."""
    if name not in DDP_BUGS:
        return
    import torch.distributed as dist

    for group in ddp.expert_parallel_bucket_groups:
        original = group.start_grad_sync

        def start(*args: Any, _o: Callable = original, **kwargs: Any) -> Any:
            saved = dist.all_reduce
            dist.all_reduce = lambda *a, **k: None
            try:
                return _o(*args, **kwargs)
            finally:
                dist.all_reduce = saved

        group.start_grad_sync = start


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


def _recompute_rng_not_restored() -> None:
    """`CheckpointFunction.backward` as shipped, except that its restore of the states saved
    by the forward (`_set_all_rng_states(*ctx.rng_states)`) does nothing; its `_fork_rng`
    still puts back the states backward started with."""
    checkpoint = mp_random.CheckpointFunction
    original = checkpoint.backward
    restore = mp_random._set_all_rng_states

    def backward(ctx: Any, *grads: Any) -> Any:
        def set_states(cpu: torch.Tensor, cuda: Any, tracker: Any) -> None:
            if cpu is not ctx.rng_states[0]:
                restore(cpu, cuda, tracker)

        mp_random._set_all_rng_states = set_states
        try:
            return original(ctx, *grads)
        finally:
            mp_random._set_all_rng_states = restore

    checkpoint.backward = staticmethod(backward)


def inject(name: str, chunks: list[torch.nn.Module]) -> None:
    if name == "none" or name in DDP_BUGS:
        return
    if name in MOE_BUGS:
        if torch.distributed.get_rank() == BUGGY_RANK:
            module = chunks[0].get_submodule(MOE_BUGS[name])
            wrong = {
                "router_no_renorm": _router_no_renorm,
                "unpermute_mismatch": _unpermute_mismatch,
                "expert_scale": _expert_scale,
            }
            wrong[name](module)
        return
    if name == "stale_activation":
        return _stale_activation()
    if name == "loss_not_averaged":
        return _loss_not_averaged()
    if name == "recompute_rng_not_restored":
        return _recompute_rng_not_restored()
    if name not in BUGS:
        known = [*BUGS, *MOE_BUGS, *DDP_BUGS, *PIPELINE_BUGS, *RECOMPUTE_BUGS]
        raise ValueError(f"unknown bug {name!r}; known: {', '.join(known)}")
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
