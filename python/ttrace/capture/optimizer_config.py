"""The optimizer's configuration, for the manifest's `optimizer` section
(docs/bundle-format.md).

The diff re-evaluates one Adam/AdamW step per element to know how ill-conditioned the update
is (docs/tolerance.md, "Optimizer-step conditioning"). That needs what the step used: per
parameter group the betas, eps, weight decay and, per captured iteration, the learning rate
(schedulers change it) and the step count (bias correction). Only `torch.optim.Adam` and
`torch.optim.AdamW` themselves are recorded (a subclass may change the update); for any
other optimizer there is no section, and the diff's tolerances stay as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from .training_snapshot import torch_optimizers


def _group_type(opt: torch.optim.Optimizer, group: dict[str, Any]) -> str | None:
    if type(opt) not in (torch.optim.Adam, torch.optim.AdamW):
        return None
    decoupled = group.get("decoupled_weight_decay", type(opt) is torch.optim.AdamW)
    return "adamw" if decoupled else "adam"


def _step_count(opt: torch.optim.Optimizer, group: dict[str, Any]) -> int | None:
    for p in group["params"]:
        step = opt.state.get(p, {}).get("step")
        if step is not None:
            return int(step.item() if isinstance(step, torch.Tensor) else step)
    return None


def _number(value: Any) -> float:
    return float(value.item() if isinstance(value, torch.Tensor) else value)


class OptimizerConfigRecorder:
    """Records the hyper-parameters of every step taken in a captured iteration."""

    def __init__(self, optimizer: Any, param_name: Callable[[torch.Tensor], str | None]) -> None:
        self.optimizers = torch_optimizers(optimizer)
        self.param_name = param_name
        self.groups: list[dict[str, Any]] | None = None
        self.type: str | None = None
        self.steps: dict[int, list[dict[str, Any]]] = {}  # iteration -> per group
        self.supported = self._describe()

    def _describe(self) -> bool:
        groups: list[dict[str, Any]] = []
        types = set()
        for opt in self.optimizers:
            for group in opt.param_groups:
                types.add(_group_type(opt, group))
                if None in types:
                    return False
                names = [self.param_name(p) for p in group["params"]]
                betas = group["betas"]
                groups.append(
                    {
                        "betas": [_number(betas[0]), _number(betas[1])],
                        "eps": _number(group["eps"]),
                        "weight_decay": _number(group["weight_decay"]),
                        "amsgrad": bool(group.get("amsgrad", False)),
                        "maximize": bool(group.get("maximize", False)),
                        "params": sorted(n for n in names if n is not None),
                    }
                )
        if len(types) != 1 or not groups:
            return False
        self.type = types.pop()
        self.groups = groups
        return True

    def record(self, iteration: int) -> None:
        """After a step of `iteration`: the learning rate and step count of each group (the
        groups are described again: a program may add groups or change eps after the
        optimizer was built)."""
        self.supported = self._describe()
        if not self.supported:
            return
        entries = []
        for opt in self.optimizers:
            for group in opt.param_groups:
                step = _step_count(opt, group)
                entries.append({"lr": _number(group["lr"]), "step": step})
        self.steps[int(iteration)] = entries

    def section(self) -> dict[str, Any] | None:
        """The manifest section, or None for an optimizer the diff cannot re-evaluate."""
        if not self.supported or self.groups is None:
            return None
        groups = []
        for index, group in enumerate(self.groups):
            entry = dict(group)
            entry["steps"] = [
                {"iteration": it, "lr": per[index]["lr"], "step": per[index]["step"]}
                for it, per in sorted(self.steps.items())
                if per[index]["step"] is not None
            ]
            groups.append(entry)
        if len(groups) == 1:
            groups[0].pop("params")  # one group updates every parameter
        return {"type": self.type, "groups": groups}


def merge_sections(sections: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """One section from every rank's: each rank names only the parameters it holds (pipeline
    stages hold different layers), so the groups' parameter lists are joined."""
    found = [s for s in sections if s is not None]
    if not found:
        return None
    merged = {"type": found[0]["type"], "groups": [dict(g) for g in found[0]["groups"]]}
    for other in found[1:]:
        if other["type"] != merged["type"] or len(other["groups"]) != len(merged["groups"]):
            return None  # ranks disagree on the optimizer: no section rather than a wrong one
        for mine, theirs in zip(merged["groups"], other["groups"], strict=True):
            if "params" in mine:
                mine["params"] = sorted(set(mine["params"]) | set(theirs.get("params", [])))
    return merged
