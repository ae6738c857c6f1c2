"""The inference's placements for one replayed call, made as capture makes them: only for a
returned tensor whose id this rank's capture did not store (see `result_placement`).

Capture decides each input's layout (from its producer, its module, its shape), an output's
from the module and what the inputs said (`CallEntry`), and a gradient's from its forward
tensor's decision. A replay's inputs are fresh tensors with no producer, so an input
decision is trusted only where its placement is the one this rank's capture recorded for
the same input; otherwise the replay is refused rather than answered with a placement
capture might not have given.
"""

from __future__ import annotations

import torch
from torch import nn

from ttrace.bundle import Placement, TensorKey
from ttrace.capture.call_template import CallTemplate
from ttrace.capture.inference import CallEntry, Decision, PlacementInference
from ttrace.capture.module_hooks import replicated_over_tp

from .errors import AgentError, ErrorCode
from .own_capture import OwnCapture


class CallInference:
    def __init__(
        self,
        inference: PlacementInference,
        own: OwnCapture,
        module: nn.Module,
        template: CallTemplate,
        tensors: dict[str, torch.Tensor],
        input_key: TensorKey,  # forward_input of this call, index to be replaced
    ) -> None:
        self.inference = inference
        self.own = own
        self.module = module
        self.template = template
        self.tensors = tensors
        self.input_key = input_key
        self._decisions: dict[str, Decision] | None = None
        self._entry: CallEntry | None = None

    def _decide_inputs(self) -> dict[str, Decision]:
        """Each input's decision as capture's `_place_inputs` makes it, checked against the
        placement this rank recorded for it."""
        if self._decisions is not None:
            return self._decisions
        decisions: dict[str, Decision] = {}
        replicated = True
        for n, slot in enumerate(self.template.slots()):
            t = self.tensors[slot.index]
            index: int | str = int(slot.index) if slot.index.isdigit() else slot.index
            _, placement, decided = self.inference.activation(
                self.module, "in", index, t, primary=n == 0
            )
            self._check(slot.index, placement)
            decisions[slot.index] = decided
            replicated = replicated and replicated_over_tp(t, decided)
            if n == 0:
                self._entry = CallEntry(decided.layout, tuple(t.shape), replicated)
        if self._entry is not None:
            self._entry = CallEntry(self._entry.layout, self._entry.shape, replicated)
        self._decisions = decisions
        return decisions

    def _check(self, index: str, placement: Placement) -> None:
        key = TensorKey(
            "nominal",
            self.input_key.iteration,
            self.input_key.micro_batch,
            self.input_key.module,
            "forward_input",
            index,
        )
        own = self.own.get(key)
        if own is not None and own.placement != placement:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"{key.path}: this rank's capture stored no placement for a returned tensor "
                "and the inference cannot reproduce capture's decision for this input "
                "(it came from its producer during capture)",
            )

    def output(
        self, index: int, tensor: torch.Tensor, primary: bool
    ) -> tuple[torch.Tensor, Placement]:
        self._decide_inputs()
        local, placement, _ = self.inference.activation(
            self.module, "out", index, tensor, primary=primary, entry=self._entry
        )
        return local, placement

    def input_grad(self, index: str, grad: torch.Tensor) -> tuple[torch.Tensor, Placement]:
        decided = self._decide_inputs()[index]
        at: int | str = int(index) if index.isdigit() else index
        local, placement, _ = self.inference.activation(
            self.module, "in", at, grad, gradient=True, decided=decided
        )
        return local, placement
