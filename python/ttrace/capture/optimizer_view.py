"""Where an optimizer keeps each parameter's state, for torch optimizers and for
Megatron-core's optimizer wrappers (recognized by their attributes, without importing
Megatron):

- `ChainedOptimizer` (`chained_optimizers`): each chained optimizer in turn;
- `FP32Optimizer` and torch optimizers: the inner torch optimizer's state, keyed by the
  model parameter itself;
- `Float16OptimizerWithFloat16Params` (`float16_groups` / `fp32_from_float16_groups`): the
  state is keyed by the fp32 main copy of each bf16/fp16 parameter, which is captured too
  (`main_param`);
- `DistributedOptimizer` (`model_float16_groups`/`shard_fp32_from_float16_groups`,
  `model_fp32_groups`/`shard_fp32_groups`, `_get_model_param_range_map`): the state of the
  owned range of the flattened parameter; a rank owning nothing of a parameter has no entry,
  and other ranks cover it.

`entry(param)` answers per model parameter: its state tensors (name -> tensor, each shaped
like the main parameter), the owned flat range when the state is sharded, and, when nothing
was found, why.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from .training_snapshot import torch_optimizers

OWNED_ELSEWHERE = "owned by another rank of the distributed optimizer"


@dataclass
class StateEntry:
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    flat_range: tuple[int, int] | None = None  # owned [start, end) of the flattened parameter


def leaf_optimizers(optimizer: Any, depth: int = 0) -> Iterator[Any]:
    """The optimizers a `ChainedOptimizer` chains (the optimizer itself otherwise)."""
    chained = getattr(optimizer, "chained_optimizers", None)
    if isinstance(chained, list | tuple) and depth < 8:
        for c in chained:
            yield from leaf_optimizers(c, depth + 1)
    elif optimizer is not None:
        yield optimizer


def _pairs(opt: Any, model_attr: str, main_attr: str) -> Iterator[tuple[Any, Any]]:
    for model_group, main_group in zip(
        getattr(opt, model_attr, None) or [], getattr(opt, main_attr, None) or [], strict=False
    ):
        yield from zip(model_group, main_group, strict=False)


class OptimizerView:
    def __init__(self, optimizer: Any) -> None:
        self.entries: dict[torch.Tensor, StateEntry] = {}
        self.range_maps = [
            rm
            for leaf in leaf_optimizers(optimizer)
            if (rm := getattr(leaf, "_get_model_param_range_map", None)) is not None
        ]
        # A distributed optimizer: each rank owns a range of each parameter, or nothing.
        self.sharded = bool(self.range_maps)
        self.readable = bool(torch_optimizers(optimizer))
        for leaf in leaf_optimizers(optimizer):
            self._read(leaf)

    def flat_range(self, param: torch.Tensor) -> tuple[int, int] | None:
        """The owned [start, end) of the flattened parameter; None when this rank owns
        nothing of it (Megatron's range map raises KeyError for those)."""
        for range_map in self.range_maps:
            try:
                owned = range_map(param)["param"]
            except KeyError:
                continue
            return int(owned.start), int(owned.end)
        return None

    def _read(self, leaf: Any) -> None:
        inner = torch_optimizers(leaf)
        state: dict[Any, Any] = {}
        for opt in inner:
            state.update(opt.state)
        range_map = getattr(leaf, "_get_model_param_range_map", None)
        if range_map is not None:
            for model_attr, main_attr in (
                ("model_float16_groups", "shard_fp32_from_float16_groups"),
                ("model_fp32_groups", "shard_fp32_groups"),
            ):
                for model, shard in _pairs(leaf, model_attr, main_attr):
                    owned = range_map(model)["param"]
                    entry = self._entry(state.get(shard), shard)
                    if model_attr == "model_float16_groups":
                        entry.tensors["main_param"] = shard
                    entry.flat_range = (int(owned.start), int(owned.end))
                    self.entries[model] = entry
            return
        for model, main in _pairs(leaf, "float16_groups", "fp32_from_float16_groups"):
            entry = self._entry(state.get(main), main)
            entry.tensors["main_param"] = main
            self.entries[model] = entry
        for opt in inner:
            for group in opt.param_groups:
                for p in group["params"]:
                    if p not in self.entries:
                        self.entries[p] = self._entry(state.get(p), p)

    @staticmethod
    def _entry(entries: dict[str, Any] | None, main: torch.Tensor) -> StateEntry:
        tensors = {
            k: v
            for k, v in (entries or {}).items()
            if isinstance(v, torch.Tensor) and v.shape == main.shape
        }
        return StateEntry(tensors)

    def entry(self, param: torch.Tensor) -> tuple[StateEntry | None, str]:
        """(the parameter's state, "") or (None, why there is none to capture)."""
        found = self.entries.get(param)
        if found is not None:
            return found, ""
        if not self.readable:
            return None, "the optimizer exposes no torch optimizer whose state ttrace can read"
        if self.sharded and self.flat_range(param) is None:
            return None, OWNED_ELSEWHERE
        return None, "not among the optimizer's parameters"
