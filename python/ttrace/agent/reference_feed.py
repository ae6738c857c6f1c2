"""Reference tensors cut to this rank's shards: what every replay feeds the module.

The reference bundle is merged to logical tensors (float64, which holds every stored dtype
exactly) and cut by the placement this rank's own capture recorded for the same tensor.
Shards of a `sum` placement (partial sums) get the value on partial 0 and zeros elsewhere:
the partial sums still add up to the reference value.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ttrace.bundle import DType, Placement, TensorKey
from ttrace.bundle.reader import BundleError, BundleReader

from .errors import AgentError, ErrorCode
from .own_capture import OwnCapture, OwnTensor


def cut(full: np.ndarray, placement: Placement, local_shape: tuple[int, ...]) -> np.ndarray:
    """The local shard of a logical tensor under a boxes or flat placement."""
    local = np.zeros(local_shape, dtype=full.dtype)
    if placement.combine == "sum" and placement.partial_index not in (None, 0):
        return local
    if placement.layout == "flat":
        src, dst = full.reshape(-1), local.reshape(-1)
        for lo, go, n in placement.flat_ranges:
            dst[lo : lo + n] = src[go : go + n]
        return local
    for box in placement.box_spans:
        d = tuple(slice(ls, ls + n) for ls, _, n in box)
        s = tuple(slice(gs, gs + n) for _, gs, n in box)
        local[d] = full[s]
    return local


class ReferenceFeed:
    def __init__(self, reference: Path, own: OwnCapture) -> None:
        self.reader = BundleReader(reference)
        self.own = own
        self.variants = list(self.reader.manifest["variants"])

    def has(self, key: TensorKey) -> bool:
        return (
            key.variant,
            key.iteration,
            key.micro_batch,
            key.module,
            key.kind,
            key.index,
        ) in self.reader.index()

    def full(self, key: TensorKey) -> np.ndarray:
        if not self.has(key):
            raise AgentError(ErrorCode.NO_REFERENCE_TENSOR, f"the reference has no {key.path}")
        identity = (key.variant, key.iteration, key.micro_batch, key.module, key.kind, key.index)
        try:
            return self.reader.merged(identity)
        except BundleError as exc:
            raise AgentError(ErrorCode.NO_REFERENCE_TENSOR, f"reference {key.path}: {exc}") from exc

    def own_tensor(self, key: TensorKey) -> OwnTensor:
        own = self.own.get(key.with_variant("nominal"))
        if own is None:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"this rank's capture has no {key.with_variant('nominal').path} to place it by",
            )
        return own

    def shard(
        self, key: TensorKey, device: torch.device, place_as: OwnTensor | None = None
    ) -> torch.Tensor:
        """Reference tensor `key` (its variant) cut to this rank's shard of the same tensor,
        in the dtype this rank captured it in, on `device`."""
        own = place_as or self.own_tensor(key)
        full = self.full(key)
        want = own.placement.global_shape
        if (full.shape or (1,)) != want:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"{key.path}: reference shape {list(full.shape)} is not the candidate's "
                f"logical shape {list(want)}",
            )
        local = cut(full.reshape(want), own.placement, own.shape)
        dtype = getattr(torch, DType.from_name(own.dtype).name)
        tensor = torch.from_numpy(local).to(dtype)
        if own.complex_type is not None:
            # Stored as (real, imaginary) pairs: hand the module the complex tensor it took.
            tensor = torch.view_as_complex(tensor.contiguous())
        if own.is_scalar:
            tensor = tensor.reshape(())
        return tensor.to(device)
