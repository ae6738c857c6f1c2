"""The bug zoo: deliberately injected silent bugs, each a reproduction of a bug class known from
real distributed-training frameworks (see docs/bug-zoo.md).

`--inject NAME` on the command line adds NAME to `ParallelConfig.bugs`, which reaches every
layer through `LayerContext.bugs` and the training loop through the config. The code that
would hold the bug asks `ctx.has_bug("name")` (or `name in bugs`) at exactly that place: each
bug is a missing or extra collective, a wrong offset, a wrong scale or a wrong mask, never an
artificial multiplication of a tensor.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bug:
    description: str
    # Where the bug lives in examples/gpt (file, and function or class).
    location: str


KNOWN: dict[str, Bug] = {
    "sp-norm-grad-not-reduced": Bug(
        "norm weight grads (sequence-parallel partial sums) not all-reduced across TP",
        "grads.py: finalize_grads",
    ),
    "cp-attn-backward": Bug(
        "context-parallel attention backward takes its own dK/dV slice without the "
        "reduce-scatter over CP ranks",
        "layers/attention.py: Attention.forward (K/V all-gather)",
    ),
    "moe-router-not-synced": Bug(
        "MoE router weight not marked sequence-parallel under TP+SP: its partial grads are "
        "never all-reduced, so TP replicas of the router drift apart",
        "layers/router.py: TopKRouter",
    ),
    "vocab-embedding-off-by-one": Bug(
        "vocab-parallel embedding range mask uses > instead of >= at the range start: the "
        "first token id of every rank's range gets a zero embedding",
        "layers/embedding.py: VocabParallelEmbedding.forward",
    ),
    "vocab-ce-missing-allreduce": Bug(
        "vocab-parallel cross entropy does not all-reduce the sum of exponentials",
        "layers/cross_entropy.py: VocabParallelCrossEntropy.forward",
    ),
    "dp-grad-sum-not-mean": Bug(
        "data-parallel gradient reduction averages a gradient that is already normalized by "
        "the global token count (mean applied twice)",
        "grads.py: finalize_grads",
    ),
    "grad-accum-scale": Bug(
        "the schedule does not divide each micro-batch loss by the number of micro-batches",
        "schedule.py: scale_loss",
    ),
    "rope-cp-offset": Bug(
        "rotary positions of a CP rank computed as one contiguous chunk instead of the "
        "load-balanced two-chunk layout",
        "layers/attention.py: Attention.__init__ (rotary positions)",
    ),
    "grad-clip-no-mp-reduce": Bug(
        "gradient clipping's global norm not all-reduced over the model-parallel group "
        "(needs --clip-grad)",
        "clip.py: clip_grad_norm",
    ),
    "dist-opt-wrong-offset": Bug(
        "distributed optimizer copies updated params out of the gathered buffer with "
        "offsets of the reversed (Megatron bucket) layout instead of the buffer's own",
        "dist_optimizer.py: DistributedOptimizer.step",
    ),
    "ep-dispatch-mismatch": Bug(
        "expert-parallel un-permute applies the dispatch permutation again instead of its "
        "inverse (gather where a scatter with the same indices is needed)",
        "layers/moe.py: MoELayer.forward",
    ),
    "fp8-amax-not-reduced": Bug(
        "FP8 weight amax not reduced across the TP group: each rank scales its shard by its "
        "local amax (needs --precision fp8)",
        "layers/context.py: LayerContext.gemm",
    ),
    "tied-embedding-not-synced": Bug(
        "tied embedding / output weight grads not all-reduced over the embedding group "
        "(first and last pipeline stage): the two copies drift apart (needs "
        "--tie-embeddings and --pp > 1)",
        "grads.py: finalize_grads (embedding-group all-reduce)",
    ),
}


def check(names: set[str]) -> None:
    unknown = sorted(n for n in names if n not in KNOWN)
    if unknown:
        raise SystemExit(f"unknown bug(s) {unknown}; known: {sorted(KNOWN)}")
