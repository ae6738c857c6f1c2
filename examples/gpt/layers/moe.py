"""Top-1 mixture of experts with expert parallelism.

Tokens are flattened batch-major, so that concatenating the tokens an expert receives from
each expert-parallel rank (in rank order, each rank's tokens in its own order) reproduces the
order the single-device reference feeds that expert; the tensors of every expert then compare
one to one. Expert parallelism here requires ep == dp (every rank of the data-parallel group
exchanges tokens) and cp == 1. With routing replay (examples/gpt/routing_replay.py) each
token's expert is the reference's choice; the router's scores and gate values are this run's.

Under tensor parallelism the router scores this rank's sequence slice (so its weight gradient
is a partial sum over tp, all-reduced like a norm weight's), then tokens and router logits
are all-gathered over tp and every tp rank runs the same routing and the same (replicated)
experts on the full sequence; each keeps its own slice of the output. Because the work after
the gather is replicated, every rank's gradient there is already the full gradient: the
gather's backward takes the own slice without summing.
"""

from __future__ import annotations

import torch
from torch import nn

from .. import comm
from .context import LayerContext
from .experts import Experts
from .router import TopKRouter
from .token_exchange import all_reduce_both


class MoELayer(nn.Module):
    def __init__(
        self, hidden: int, ffn: int, num_experts: int, ctx: LayerContext, layer_number: int = 0
    ) -> None:
        super().__init__()
        if ctx.cp_size > 1:
            raise ValueError("the example's MoE layer supports tp, ep and dp only (cp = 1)")
        self.ctx = ctx
        self.sequence_parallel = ctx.sp
        self.num_experts = num_experts
        self.layer_number = layer_number
        self.router = TopKRouter(hidden, num_experts, ctx)
        self.experts = Experts(hidden, ffn, num_experts, ctx)
        self.local_expert_indices = self.experts.local_expert_indices

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.router(x)
        if self.ctx.sp:
            tp = self.ctx.tp_group
            x = comm.gather_along_split_grad(x, 0, tp)
            logits = comm.gather_along_split_grad(logits, 0, tp)
            return comm.scatter_along(self._dispatch(x, logits), 0, tp)
        return self._dispatch(x, logits)

    def _dispatch(self, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        s, b, h = x.shape
        tokens = x.transpose(0, 1).reshape(-1, h)  # batch-major [b*s, h]
        logits = logits.transpose(0, 1).reshape(-1, self.num_experts)
        probs = torch.softmax(logits.float(), dim=-1)
        if self.ctx.routing is None:
            top_p, top_e = probs.max(dim=-1)
        else:
            # Routing replay: the expert choice is the reference's (recorded there); the gate
            # value is still this run's own probability of that expert.
            top_e = self.ctx.routing.choose(self.layer_number, probs, b, s)
            top_p = probs.gather(1, top_e[:, None]).squeeze(1)
        order = torch.argsort(top_e, stable=True)
        counts = torch.bincount(top_e, minlength=self.num_experts)
        routed = tokens.index_select(0, order)

        group, n, me = self.ctx.ep_group, self.ctx.ep_size, self.ctx.ep_rank
        all_counts = [counts.clone() for _ in range(n)]
        if n > 1:
            comm.dist.all_gather(all_counts, counts, group=group)
        count_mat = torch.stack(all_counts)  # [ep rank, expert]
        cap = int(count_mat.sum(1).max())
        padded = torch.zeros(cap, h, dtype=x.dtype).index_copy(
            0, torch.arange(routed.shape[0]), routed
        )
        pool = comm.gather_along(padded, 0, group)  # [n*cap, h]
        starts = torch.cumsum(count_mat, 1) - count_mat  # first row of expert e at rank r

        out_pool = torch.zeros(n * cap, h, dtype=x.dtype)
        for i, e in enumerate(self.local_expert_indices):
            rows = torch.cat(
                [r * cap + starts[r, e] + torch.arange(int(count_mat[r, e])) for r in range(n)]
            ).long()
            y = self.experts.local_experts[i](pool.index_select(0, rows))
            out_pool = out_pool.index_add(0, rows, y)
        out_pool = all_reduce_both(out_pool, group)
        mine = out_pool[me * cap : me * cap + routed.shape[0]]
        if self.ctx.has_bug("ep-dispatch-mismatch"):
            # Bug zoo: the un-permute gathers with the dispatch indices (applying the
            # permutation a second time) where it must scatter with them.
            combined = mine.index_select(0, order)
        else:
            combined = torch.empty_like(mine).index_copy(0, order, mine)
        combined = combined * top_p.to(combined.dtype)[:, None]
        return combined.view(b, s, h).transpose(0, 1).contiguous()
