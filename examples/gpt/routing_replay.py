"""Routing replay (Megatron-LM's `moe_enable_routing_replay`): the reference records every
token's expert choice; a candidate replays it instead of taking its own top-k.

A discrete routing decision is discontinuous in round-off: when two experts nearly tie, the
candidate's own round-off can send a token to another expert than the reference did, and
that expert's tensors then hold other tokens (a different shape) and cannot be compared. With
replay the decisions come from the reference, while the router's scores and probabilities
(and so the gate values and every gradient) are still the candidate's own and compared.

The reference's nominal variant records, per (iteration, micro-batch, layer), the expert of
every token of the global micro-batch as [batch, seq]; its perturbed variants replay those
too, so the floors measure continuous round-off only. A rank replays its own tokens, sliced
from the global batch exactly as its ids are (`data.local_slice`).
"""

from __future__ import annotations

from pathlib import Path

import torch

from .data import local_slice

FORMAT = "ttrace-example-routing/1"
FILENAME = "routing.pt"


class RoutingReplay:
    """mode "record": choose by argmax and keep the choice; mode "replay": use the table."""

    def __init__(
        self,
        mode: str,
        table: dict[str, torch.Tensor] | None = None,
        dp: tuple[int, int] = (0, 1),
        cp: tuple[int, int] = (0, 1),
    ) -> None:
        if mode not in ("record", "replay"):
            raise ValueError(f"routing replay mode {mode!r}")
        self.mode = mode
        self.table: dict[str, torch.Tensor] = dict(table or {})
        self.dp_rank, self.dp_size = dp
        self.cp_rank, self.cp_size = cp
        self.iteration = 0
        self.micro_batch = 0

    @staticmethod
    def key(iteration: int, micro_batch: int, layer: int) -> str:
        return f"{iteration}/{micro_batch}/{layer}"

    def choose(self, layer: int, probs: torch.Tensor, batch: int, seq: int) -> torch.Tensor:
        """Expert index of each token of `probs` [batch*seq, E] (batch-major)."""
        k = self.key(self.iteration, self.micro_batch, layer)
        if self.mode == "record":
            top_e = probs.argmax(dim=-1)
            self.table[k] = top_e.detach().view(batch, seq).to(torch.int16).clone()
            return top_e
        if k not in self.table:
            raise KeyError(f"routing replay: no record for iteration/micro-batch/layer {k}")
        whole = self.table[k][None]  # [1, B, S], sliced like the ids
        mine = local_slice(whole, self.dp_rank, self.dp_size, self.cp_rank, self.cp_size)[0]
        if tuple(mine.shape) != (batch, seq):
            raise ValueError(
                f"routing replay {k}: recorded tokens {tuple(mine.shape)}, this rank has "
                f"{(batch, seq)} (the reference must use the same global batch and seq-len)"
            )
        return mine.reshape(-1).long()

    def save(self, path: Path) -> None:
        torch.save({"format": FORMAT, "variant": "nominal", "routing": self.table}, path)

    @classmethod
    def load(cls, path: Path, dp: tuple[int, int], cp: tuple[int, int]) -> RoutingReplay:
        data = torch.load(path, weights_only=True)
        if data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a routing file ({data.get('format')!r})")
        return cls("replay", data["routing"], dp, cp)
