"""Which call of a module a forward is: its call index within the micro-batch, or the
recompute of an earlier call.

A module may run more than once per micro-batch (a shared block, an embedding called again
for multi-token prediction): call 0 keeps the module's canonical name, call k >= 1 is filed
as ``<module>@call<k>``, so each call is its own record, compared call by call, and bundles
of models that call every module once are unchanged.

Activation recompute (`torch.utils.checkpoint`, reentrant or not; Megatron's recompute)
runs a forward again *during backward*. That forward is not another call: it is matched to
the call it recomputes (the outermost recomputed module by its first input, which the
checkpoint keeps alive and hands back, its callees in call order) and filed as
``<call name>@recompute`` under that call's micro-batch, so the diff compares the recomputed
values with the original forward (a recompute that does not restore the random state shows
up there). Gradients that only the recompute's graph produces (reentrant checkpointing runs
the first forward without grad) are filed under the original call's names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch
from torch import nn

RECOMPUTE_SUFFIX = "@recompute"


def call_name(module_name: str, call: int) -> str:
    """The name call `call` of a module is filed under (call 0: the module's own name)."""
    return module_name if call == 0 else f"{module_name}@call{call}"


_LATER_CALL = re.compile(r"^(?P<module>.+)@call(?P<k>[1-9][0-9]*)$")


def called_module(name: str) -> str:
    """The module a call name belongs to (`shared@call1` -> `shared`; a module's own name
    is call 0's)."""
    match = _LATER_CALL.match(name)
    return name if match is None else match.group("module")


_GRAPH_TASK_ID = getattr(torch._C, "_current_graph_task_id", None)


def in_backward() -> bool:
    """Whether autograd's engine is running (a forward now is a recompute). A torch without
    the query (it exists since 2.1) never sees a recompute as one."""
    return _GRAPH_TASK_ID is not None and _GRAPH_TASK_ID() != -1


def input_key(first: torch.Tensor | None) -> tuple | None:
    """What identifies a call's first tensor input across the recompute: the checkpoint keeps
    the very tensor (reentrant mode: a detached alias of the same storage)."""
    if first is None:
        return None
    try:
        return (first.data_ptr(), tuple(first.shape), first.dtype)
    except RuntimeError:  # a tensor without storage (a fake or functional tensor)
        return None


@dataclass(eq=False)
class CallRecord:
    """One forward call of a captured module within a step."""

    module: nn.Module
    name: str  # where its tensors go: the module's name, or `<name>@call<k>`
    mb: int
    key: tuple | None
    children: list[CallRecord] = field(default_factory=list)
    hooked: bool = False  # its gradients were hooked (grad mode was on in the forward)
    recomputed: bool = False


@dataclass
class CallLog:
    """The calls of one step, and the recompute in progress."""

    _counts: dict[tuple[str, int, int, str], int] = field(default_factory=dict)
    _calls: dict[nn.Module, list[CallRecord]] = field(default_factory=dict)
    _open: list[CallRecord] = field(default_factory=list)
    # the recompute in progress: matched records, None for a call that matched nothing
    _recompute: list[CallRecord | None] = field(default_factory=list)

    def reset(self) -> None:
        """A new step: calls of the previous one can no longer be recomputed."""
        self._counts.clear()
        self._calls.clear()
        self._open.clear()
        self._recompute.clear()

    def begin(
        self, module: nn.Module, name: str, step: tuple[str, int], mb: int, key: tuple | None
    ) -> CallRecord:
        counter = (step[0], step[1], mb, name)
        index = self._counts.get(counter, 0)
        self._counts[counter] = index + 1
        record = CallRecord(module, call_name(name, index), mb, key)
        if self._open:
            self._open[-1].children.append(record)
        self._calls.setdefault(module, []).append(record)
        self._open.append(record)
        return record

    def end(self, module: nn.Module) -> CallRecord | None:
        # Pop back to `module`, tolerating a callee whose post-hook never ran (an exception).
        while self._open:
            record = self._open.pop()
            if record.module is module:
                return record
        return None

    def begin_recompute(self, module: nn.Module, key: tuple | None) -> CallRecord | None:
        if self._recompute:
            parent = self._recompute[-1]
            pool = parent.children if parent is not None else []
        else:
            # The outermost recomputed module: the latest call whose input is this one.
            pool = [r for r in reversed(self._calls.get(module, [])) if r.key == key]
        record = next((r for r in pool if r.module is module and not r.recomputed), None)
        if record is not None:
            record.recomputed = True
        self._recompute.append(record)
        return record

    def end_recompute(self) -> CallRecord | None:
        return self._recompute.pop() if self._recompute else None

    def recomputing(self) -> bool:
        return bool(self._recompute)
