"""Placement and scale of every tensor a replay returns: exactly those capture gave the same
tensor id on this rank.

The rank's own rank file records the placement capture chose for each tensor it stored
(decided there from the forward tensor's layout, its producer and its shape, or read from a
DTensor); a replayed tensor with the same id takes that placement. Only a tensor this rank's
capture did not store (its kind filtered out) is placed by the inference, through the
`fallback` the caller gives, which follows capture's own calls or refuses the replay. The
stored value is scaled by capture's own rule (`stored_scale`), so that averaged gradients
and per-rank losses add up as the captured ones do.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ttrace.bundle import Placement, TensorKey
from ttrace.capture.dtensor_placement import is_dtensor
from ttrace.capture.inference import PlacementInference
from ttrace.capture.module_hooks import stored_scale

from .errors import AgentError, ErrorCode
from .own_capture import OwnCapture

Fallback = Callable[[], tuple[torch.Tensor, Placement]]


class ResultPlacement:
    def __init__(self, own: OwnCapture, inference: PlacementInference) -> None:
        self.own = own
        self.inference = inference

    def place(
        self,
        key: TensorKey,
        tensor: torch.Tensor,
        fallback: Fallback,
        param_scale: float = 1.0,
    ) -> tuple[torch.Tensor, Placement]:
        """(value to return, its placement) of replayed `tensor` filed under `key`.
        `fallback` gives (local, placement) when this rank's capture stored no such id;
        `param_scale`: the scale the inference gives a `param_grad` (capture's own)."""
        own = self.own.get(key.with_variant("nominal"))
        if own is None:
            local, placement = fallback()
        else:
            local = tensor.to_local() if is_dtensor(tensor) else tensor
            placement = own.placement
            stored = tuple(local.shape) if local.dim() > 0 else (1,)
            if stored != own.shape:
                raise AgentError(
                    ErrorCode.REPLAY_FAILED,
                    f"{key.path}: the replay gave a local shape {list(stored)}, this rank "
                    f"captured {list(own.shape)}",
                )
        factor = stored_scale(self.inference, key.kind, placement, tuple(local.shape), param_scale)
        data = local.detach().clone()
        if factor != 1.0:
            data.mul_(factor)
        return data, placement
