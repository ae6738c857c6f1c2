"""Which reference token each dispatched row of a mixture-of-experts layer is, recorded from
the job's own routing and dispatch (Megatron-core's `MoELayer` and its token dispatcher:
all-to-all, all-gather), so that router outputs and expert activations merge into the
reference's token order (`token_rows`).

During a captured step, for each call of a MoE layer:
1. the layer's input placement gives each local token its global id (``s * B + b`` of the
   global ``[s, b]``, as the reference flattens it);
2. the routing maps of all ranks that hold other tokens (the dispatcher's tensor-and-expert
   parallel group, then the experts' data-parallel group) are gathered: an expert's rows in
   the reference are the global tokens routed to it, in id order;
3. the ids travel through the dispatcher's own `dispatch_preprocess`, `token_dispatch` and
   `dispatch_postprocess` (the same permutation, all-to-all, gather and sort as the tokens;
   the dispatcher's state is restored after each shadow call), so the row order is the
   framework's, not a model of it.
This costs one gather of ids and routing maps and a second dispatch of a one-column tensor
per MoE layer call, during captured steps only; both are collectives every rank of the
layer's groups makes in the same order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from .capture_state import CaptureState
from .expert_groups import EXPERT_LIST, ExpertGroups, expert_groups
from .layout import Layout
from .naming import ModuleNames
from .shard_math import slice_full
from .token_rows import TokenRows, expert_layout

log = logging.getLogger("ttrace.capture")

DISPATCH = ("dispatch_preprocess", "token_dispatch", "dispatch_postprocess")


@dataclass(frozen=True)
class RowsDecision:
    """Rows of a tensor, its layout over a group (`over`: size, this rank's index; an
    expert's tensor-parallel group) and whether it is an expert's (its layout then follows
    the module, `expert_layout`)."""

    rows: TokenRows
    layout: Layout
    over: tuple[int, int] = (1, 0)
    expert: bool = False


@dataclass
class LayerCall:
    """One captured call of a MoE layer."""

    ids: torch.Tensor  # global token id of each local token, [s_local, b_local]
    replica: bool
    # expert -> the global token ids routed to it, ascending (its reference rows)
    order: list[torch.Tensor] = field(default_factory=list)
    shadow: torch.Tensor | None = None


def is_moe_layer(module: nn.Module) -> bool:
    """Megatron-core's `MoELayer` (a router, a token dispatcher and a list of experts)."""
    experts = getattr(module, "experts", None)
    return (
        isinstance(getattr(module, "router", None), nn.Module)
        and getattr(module, "token_dispatcher", None) is not None
        and isinstance(getattr(experts, EXPERT_LIST, None), nn.ModuleList)
    )


def token_ids(shape: tuple[int, ...], placement: Any) -> torch.Tensor:
    """Global token ids ``[s, b]`` of a local ``[s, b, h]`` tensor under `placement`."""
    s, b = placement.global_shape[0], placement.global_shape[1]
    full = torch.arange(s * b, dtype=torch.float64).view(s, b, 1)
    full = full.expand(*placement.global_shape)
    return slice_full(full, placement, shape)[..., 0].to(torch.int64)


def _gather(items: list[Any], groups: list[Any]) -> list[Any]:
    for group in groups:
        size = dist.get_world_size(group)
        if size == 1:
            continue
        out: list[Any] = [None] * size
        dist.all_gather_object(out, items, group=group)
        items = [x for part in out for x in part]
    return items


class TokenRouting:
    def __init__(self, names: ModuleNames, inference: Any, state: CaptureState) -> None:
        self.names = names
        self.inference = inference
        self.state = state
        self.calls: dict[int, LayerCall] = {}  # by id of the dispatcher
        self.rows: dict[nn.Module, RowsDecision] = {}
        self.counts: dict[nn.Module, RowsDecision] = {}  # tokens per local expert
        self._handles: list[Any] = []
        self._patched: list[tuple[Any, str]] = []
        self._warned: set[str] = set()

    def install(self) -> None:
        for module in self.names.names:
            if is_moe_layer(module):
                self._install_layer(module)

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        for obj, name in self._patched:
            obj.__dict__.pop(name, None)
        self._handles, self._patched = [], []

    def _install_layer(self, layer: nn.Module) -> None:
        dispatcher = layer.token_dispatcher
        hook = self._layer_pre(layer, dispatcher)
        self._handles.append(layer.register_forward_pre_hook(hook, with_kwargs=True))
        for name in DISPATCH:
            original = getattr(dispatcher, name)
            setattr(dispatcher, name, self._shadowed(layer, dispatcher, name, original))
            self._patched.append((dispatcher, name))

    # --- lookups for placement inference --------------------------------------------------

    def decide(self, module: nn.Module, direction: str, tensor: torch.Tensor) -> Any:
        """The rows of `tensor`, an input or output of `module`, or None. Only during a
        captured step: rows recorded for one call say nothing about a replay's tokens."""
        if tensor.dim() == 0 or not self.state.in_step:
            return None
        root = self.names.expert_root.get(module, module)
        found = self.rows.get(root)
        if found is not None and tensor.shape[0] == len(found.rows.indices):
            if not found.expert:  # the router: its outputs [tokens, experts]
                return found if direction == "out" and tensor.dim() == 2 else None
            layout = expert_layout(module, direction, tensor.dim())
            return RowsDecision(found.rows, layout, found.over, True)
        counts = self.counts.get(module)
        integer = tensor.dim() == 1 and not tensor.is_floating_point()
        if counts is not None and integer and tensor.shape[0] == len(counts.rows.indices):
            return counts
        return None

    # --- hooks ------------------------------------------------------------------------------

    def _layer_pre(self, layer: nn.Module, dispatcher: Any) -> Callable:
        def hook(module: nn.Module, args: tuple, kwargs: dict[str, Any]) -> None:
            self.calls.pop(id(dispatcher), None)
            for m in [layer.router, layer.experts, *getattr(layer.experts, EXPERT_LIST)]:
                self.rows.pop(m, None)  # nothing recorded for another call may place this one
            self.counts.pop(layer.experts, None)
            if not self.state.in_step:
                return
            hidden = args[0] if args else kwargs.get("hidden_states")
            if not isinstance(hidden, torch.Tensor) or hidden.dim() != 3:
                return
            _, placement, _ = self.inference.activation(layer, "in", 0, hidden, primary=True)
            ids = token_ids(tuple(hidden.shape), placement)
            call = LayerCall(ids, placement.combine == "replica")
            self.calls[id(dispatcher)] = call
            size = int(placement.global_shape[0] * placement.global_shape[1])
            rows = TokenRows(size, tuple(ids.flatten().tolist()), call.replica)
            self.rows[layer.router] = RowsDecision(rows, Layout("replica"))

        return hook

    def _shadowed(self, layer: nn.Module, dispatcher: Any, name: str, original: Callable) -> Any:
        def method(*args: Any) -> Any:
            call = self.calls.get(id(dispatcher))
            if call is None:
                return original(*args)
            if name == "dispatch_preprocess":
                hidden, routing_map, probs = args
                self._order(layer, dispatcher, call, routing_map)
                shadow = call.ids.to(torch.float64).view(*hidden.shape[:-1], 1)
                call.shadow = self._shadow(dispatcher, original, shadow, routing_map, probs)[0]
                return original(*args)
            assert call.shadow is not None
            call.shadow = self._shadow(dispatcher, original, call.shadow, *args[1:])[0]
            out = original(*args)
            if name == "dispatch_postprocess":
                self._expert_rows(layer, call, out[1])
                self.calls.pop(id(dispatcher), None)
            return out

        return method

    @staticmethod
    def _shadow(dispatcher: Any, original: Callable, *args: Any) -> Any:
        """`original` on the ids, the dispatcher's state left as it was."""
        saved = dict(vars(dispatcher))
        try:
            return original(*args)
        finally:
            vars(dispatcher).clear()
            vars(dispatcher).update(saved)

    def _order(
        self, layer: nn.Module, dispatcher: Any, call: LayerCall, routing_map: torch.Tensor
    ) -> None:
        """Each expert's reference rows: the global tokens routed to it, in id order."""
        mine = (call.ids.flatten().cpu(), routing_map.detach().cpu())
        groups = [
            getattr(dispatcher, "tp_ep_group", None),
            getattr(layer.experts, "dp_group", None),
        ]
        every = _gather([mine], [g for g in groups if isinstance(g, dist.ProcessGroup)])
        ids = torch.cat([i for i, _ in every])
        routed = torch.cat([m for _, m in every])
        # Tokens held by several ranks (replicas over tensor parallelism) count once.
        ids, order = torch.sort(ids, stable=True)
        first = torch.ones_like(ids, dtype=torch.bool)
        first[1:] = ids[1:] != ids[:-1]
        ids, routed = ids[first], routed[order][first]
        call.order = [ids[routed[:, e]] for e in range(routed.shape[1])]

    def _expert_rows(self, layer: nn.Module, call: LayerCall, per_expert: Any) -> None:
        container = layer.experts
        groups = expert_groups(container) or ExpertGroups()
        over = (groups.etp, groups.etp_rank)
        experts = list(getattr(container, EXPERT_LIST))
        expert_ids = self.names.expert_id
        counts = [int(n) for n in torch.as_tensor(per_expert).tolist()]
        assert call.shadow is not None
        shadow = call.shadow.flatten().round().to(torch.int64).cpu()
        sizes = [len(tokens) for tokens in call.order]
        offsets = [sum(sizes[:e]) for e in range(len(sizes))]
        found: dict[nn.Module, RowsDecision] = {}
        start, whole = 0, []
        for expert, n in zip(experts, counts, strict=True):
            e = expert_ids[expert]
            tokens, got = call.order[e], shadow[start : start + n]
            start += n
            rows = torch.searchsorted(tokens, got)
            if bool((rows >= len(tokens)).any()) or not torch.equal(tokens[rows], got):
                # A row its router did not send there: the dispatch itself is wrong. No
                # reference row to place it at; its tensors are left to the other rules.
                self._misrouted(layer, expert)
                return
            found[expert] = RowsDecision(
                TokenRows(sizes[e], tuple(rows.tolist())), Layout(), over, True
            )
            whole += (rows + offsets[e]).tolist()
        self.rows.update(found)
        self.rows[container] = RowsDecision(
            TokenRows(sum(sizes), tuple(whole)), Layout(), over, True
        )
        self._counts(container, [expert_ids[x] for x in experts], len(sizes), groups)

    def _misrouted(self, layer: nn.Module, expert: nn.Module) -> None:
        name = self.names.name(expert)
        if name not in self._warned:
            self._warned.add(name)
            log.warning(
                "ttrace: %s received tokens the router of %s did not route to it: its rows "
                "cannot be placed in the reference's token order",
                name,
                self.names.name(layer),
            )

    def _counts(
        self, container: nn.Module, local: list[int], experts: int, groups: ExpertGroups
    ) -> None:
        """Tokens per local expert: split by expert, partial sums over expert data
        parallelism (each copy of an expert counts its own tokens), the same on every rank
        of an expert's tensor-parallel group."""
        rows = TokenRows(experts, tuple(local), groups.etp > 1)
        layout = Layout("sum") if groups.edp > 1 else Layout("replica")
        self.counts[container] = RowsDecision(rows, layout, (groups.edp, groups.edp_rank))
