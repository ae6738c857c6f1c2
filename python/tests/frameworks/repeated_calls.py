"""A model whose modules run more than once per micro-batch, under DDP on 2 ranks: a shared
block called twice (tied weights), and blocks wrapped in `torch.utils.checkpoint`
(activation recompute), or compiled per block (`torch.compile`, torchtitan's default:
`--compile blocks` compiles in place, `--compile wrapped` wraps; `--compile whole` compiles
the whole model, which the tracer refuses).

Every block draws a random per-feature keep mask from the global generator (dropout over
features: the same mask for every row, so a data-parallel rank draws what the reference
draws; `--keep 1.0` draws nothing: deterministic blocks). `--bug second-call` makes the
shared block's second call (its `last=True` path) scale its output by 1 + 1e-3 on one
rank; `--bug rng` recomputes without restoring the random state (`preserve_rng_state=False`),
so the recompute draws another mask.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

import ttrace.capture as ttc  # ttrace

from .common import finish, init, local_rows

VOCAB, HIDDEN, FFN, BATCH, SEQ, STEPS, KEEP = 32, 16, 32, 4, 6, 2, 0.75
BUG_SCALE = 1.0 + 1e-3


class FeatureMask(nn.Module):
    def __init__(self, keep: float) -> None:
        super().__init__()
        self.keep = keep

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.keep >= 1.0:
            return x  # keeps every feature without drawing: a deterministic block
        keep = (torch.rand(x.shape[-1]) < self.keep).to(x.dtype) / self.keep
        return x * keep


class Block(nn.Module):
    def __init__(self, keep: float, scale_second_call: bool = False) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN)
        self.fc1 = nn.Linear(HIDDEN, FFN)
        self.act = nn.GELU()
        self.mask = FeatureMask(keep)
        self.fc2 = nn.Linear(FFN, HIDDEN)
        self.scale_second_call = scale_second_call

    def forward(self, x: torch.Tensor, last: bool = False) -> torch.Tensor:
        out = x + self.fc2(self.mask(self.act(self.fc1(self.norm(x)))))
        # The second call takes its own code path (`last`), as a model's calls of a shared
        # module do (multi-token prediction): the bug lives on that path only.
        if self.scale_second_call and last:
            out = out * BUG_SCALE
        return out


class Net(nn.Module):
    def __init__(
        self, recompute: str, preserve_rng: bool, scale_second_call: bool, keep: float
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.shared = Block(keep, scale_second_call)
        self.layers = nn.ModuleList([Block(keep), Block(keep)])
        self.head = nn.Linear(HIDDEN, VOCAB)
        self.recompute = recompute
        self.preserve_rng = preserve_rng

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.shared(self.embed(ids))
        for layer in self.layers:
            if self.recompute == "none":
                h = layer(h)
            else:
                reentrant = self.recompute == "reentrant"
                h = checkpoint(
                    layer, h, use_reentrant=reentrant, preserve_rng_state=self.preserve_rng
                )
        return self.head(self.shared(h, last=True))  # the shared block again


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--recompute", choices=["none", "reentrant", "nonreentrant"])
    parser.add_argument("--compile", choices=["none", "blocks", "wrapped", "whole"], default="none")
    # 1.0: no dropout (an eager reference then matches compiled blocks, whose random
    # numbers inductor draws its own way)
    parser.add_argument("--keep", type=float, default=KEEP)
    parser.add_argument("--bug", choices=["none", "second-call", "rng"], default="none")
    return parser.parse_args()


def global_batch(step: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(500 + step)
    return torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)


def main() -> None:
    args = parse_args()
    rank, world = init()
    candidate_bug = world > 1 and rank == 1
    model = Net(
        args.recompute or "none",
        preserve_rng=args.bug != "rng",
        scale_second_call=candidate_bug and args.bug == "second-call",
        keep=args.keep,
    )
    ttc.seeded_init(model, seed=0)  # ttrace
    # Per block, as torchtitan compiles: in place, or wrapped; or the whole model.
    if args.compile == "blocks":
        for layer in model.layers:
            layer.compile(fullgraph=True)
    elif args.compile == "wrapped":
        for i, layer in enumerate(model.layers):
            model.layers[i] = torch.compile(layer, fullgraph=True)
    elif args.compile == "whole":
        model = torch.compile(model, fullgraph=True)
    if world > 1:
        model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    role = "reference" if world == 1 else "candidate"  # ttrace
    tracer = ttc.Tracer(model, opt, args.out, role=role, perturbations=2 * (world == 1))  # ttrace
    for _ in tracer.run_variants():  # ttrace
        for step in range(STEPS):  # ttrace
            with tracer.step(step):  # ttrace
                ids = local_rows(global_batch(step), rank, world)
                logits = model(ids)
                F.cross_entropy(logits.flatten(0, 1), ids.flatten()).backward()
                opt.step()
                opt.zero_grad()
    tracer.close()  # ttrace


if __name__ == "__main__":
    main()
    finish()
