"""The bug zoo: deliberately injected silent bugs, each a reproduction of a bug class known from
real distributed-training frameworks (see docs/bug-zoo.md).

`--inject NAME` on the command line adds NAME to `ParallelConfig.bugs`, which reaches every
layer through `LayerContext.bugs` and the training loop through the config. The code that
would hold the bug asks `ctx.has_bug("name")` (or `name in bugs`) at exactly that place: each
bug is a missing or extra collective, a wrong offset, a wrong scale or a wrong mask, never an
artificial multiplication of a tensor.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Need:
    """One condition of the candidate's layout without which a bug's code never runs."""

    flag: str  # the train.py flags that meet it, e.g. "--cp 2"
    met: Callable[[Any], bool]  # on train.py's parsed arguments


TP = Need("--tp 2", lambda a: a.tp > 1)
SP = Need("sequence parallelism (no --no-sequence-parallel)", lambda a: not a.no_sequence_parallel)
CP = Need("--cp 2", lambda a: a.cp > 1)
EP = Need("--ep 2", lambda a: a.ep > 1)
PP = Need("--pp 2", lambda a: a.pp > 1)
DATA = Need("--dp 2 or --cp 2", lambda a: a.dp * a.cp > 1)
NO_DIST_OPT = Need("no --dist-optimizer", lambda a: not a.dist_optimizer)
DIST_OPT = Need("--dp 2 --dist-optimizer", lambda a: a.dist_optimizer and a.dp > 1)
MOE = Need("--experts 4", lambda a: a.experts > 0)
MICRO = Need("--micro-batches 2", lambda a: a.micro_batches > 1)
CLIP = Need("--clip-grad 0.05 with --tp 2 or --pp 2", lambda a: a.clip_grad > 0 and a.tp * a.pp > 1)
FP8 = Need("--precision fp8", lambda a: a.precision == "fp8")
TIED = Need("--tie-embeddings", lambda a: a.tie_embeddings)
RESUME = Need("--resume DIR", lambda a: a.resume is not None)
WARMUP = Need("--lr-warmup N (N > the checkpoint's step)", lambda a: a.lr_warmup > 0)


@dataclass(frozen=True)
class Bug:
    description: str
    # Where the bug lives in examples/gpt (file, and function or class).
    location: str
    # What the candidate's layout must have for the bug's code to run at all: without it the
    # "buggy" run is a correct one, and a clean diff would look like a missed bug.
    needs: tuple[Need, ...] = ()


KNOWN: dict[str, Bug] = {
    "sp-norm-grad-not-reduced": Bug(
        "norm weight grads (sequence-parallel partial sums) not all-reduced across TP",
        "grads.py: finalize_grads",
        needs=(TP, SP),
    ),
    "cp-attn-backward": Bug(
        "context-parallel attention backward takes its own dK/dV slice without the "
        "reduce-scatter over CP ranks",
        "layers/attention.py: Attention.forward (K/V all-gather)",
        needs=(CP,),
    ),
    "moe-router-not-synced": Bug(
        "MoE router weight not marked sequence-parallel under TP+SP: its partial grads are "
        "never all-reduced, so TP replicas of the router drift apart",
        "layers/router.py: TopKRouter",
        needs=(TP, SP, MOE),
    ),
    "vocab-embedding-off-by-one": Bug(
        "vocab-parallel embedding range mask uses > instead of >= at the range start: the "
        "first token id of every rank's range gets a zero embedding",
        "layers/embedding.py: VocabParallelEmbedding.forward",
        needs=(TP,),
    ),
    "vocab-ce-missing-allreduce": Bug(
        "vocab-parallel cross entropy does not all-reduce the sum of exponentials",
        "layers/cross_entropy.py: VocabParallelCrossEntropy.forward",
        needs=(TP,),
    ),
    "dp-grad-sum-not-mean": Bug(
        "data-parallel gradient reduction averages a gradient that is already normalized by "
        "the global token count (mean applied twice)",
        "grads.py: finalize_grads",
        needs=(DATA, NO_DIST_OPT),
    ),
    "grad-accum-scale": Bug(
        "the schedule does not divide each micro-batch loss by the number of micro-batches",
        "schedule.py: scale_loss",
        needs=(MICRO,),
    ),
    "rope-cp-offset": Bug(
        "rotary positions of a CP rank computed as one contiguous chunk instead of the "
        "load-balanced two-chunk layout",
        "layers/attention.py: Attention.__init__ (rotary positions)",
        needs=(CP,),
    ),
    "grad-clip-no-mp-reduce": Bug(
        "gradient clipping's global norm not all-reduced over the model-parallel group "
        "(needs --clip-grad)",
        "clip.py: clip_grad_norm",
        needs=(CLIP,),
    ),
    "dist-opt-wrong-offset": Bug(
        "distributed optimizer copies updated params out of the gathered buffer with "
        "offsets of the reversed (Megatron bucket) layout instead of the buffer's own",
        "dist_optimizer.py: DistributedOptimizer.step",
        needs=(DIST_OPT,),
    ),
    "ep-dispatch-mismatch": Bug(
        "expert-parallel un-permute applies the dispatch permutation again instead of its "
        "inverse (gather where a scatter with the same indices is needed)",
        "layers/moe.py: MoELayer.forward",
        needs=(EP, MOE),
    ),
    "fp8-amax-not-reduced": Bug(
        "FP8 weight amax not reduced across the TP group: each rank scales its shard by its "
        "local amax (needs --precision fp8)",
        "layers/context.py: LayerContext.gemm",
        needs=(TP, FP8),
    ),
    "tied-embedding-not-synced": Bug(
        "tied embedding / output weight grads not all-reduced over the embedding group "
        "(first and last pipeline stage): the two copies drift apart (needs "
        "--tie-embeddings and --pp > 1)",
        "grads.py: finalize_grads (embedding-group all-reduce)",
        needs=(PP, TIED),
    ),
    "resume-optimizer-state-dropped": Bug(
        "on resume only the model weights are loaded: the optimizer starts fresh (zero Adam "
        "moments, step 0)",
        "resume.py: resume",
        needs=(RESUME,),
    ),
    "resume-lr-restart": Bug(
        "on resume the learning-rate schedule's step is not restored: warm-up starts again",
        "resume.py: resume",
        needs=(RESUME, WARMUP),
    ),
    "resume-data-position": Bug(
        "on resume the data position is not restored: the run trains on the stream's first "
        "batches again",
        "resume.py: resume",
        needs=(RESUME,),
    ),
}


# Bugs of resuming from a checkpoint: they need one, so python/tests/test_resume_checkpoint.py
# covers them instead of the zoo matrix (python/ttrace_testing/bug_specs.py).
RESUME = frozenset(n for n in KNOWN if n.startswith("resume-"))


def check(names: set[str]) -> None:
    unknown = sorted(n for n in names if n not in KNOWN)
    if unknown:
        raise SystemExit(f"unknown bug(s) {unknown}; known: {sorted(KNOWN)}")


def unmet(name: str, args: Any) -> list[str]:
    """The flags a candidate run with `args` lacks for bug `name` to be injected at all."""
    return [need.flag for need in KNOWN[name].needs if not need.met(args)]


def check_layout(names: set[str], args: Any) -> None:
    """Refuses a candidate whose layout cannot show one of its injected bugs."""
    for name in sorted(names):
        missing = unmet(name, args)
        if missing:
            raise SystemExit(
                f"bug {name} needs {', '.join(missing)}: in this layout its code never runs, "
                "and the run would be a correct one"
            )


def shown_by(args: Any) -> list[str]:
    """The bugs that a candidate run with `args` can show."""
    return sorted(name for name in KNOWN if not unmet(name, args))


def main(argv: list[str]) -> int:
    """`python -m examples.gpt.bugs NAME TRAIN_FLAGS...`: exit 0 when a candidate trained
    with TRAIN_FLAGS can show bug NAME, else a message naming what it needs (the demo asks
    before it captures anything)."""
    from .train import parse_args  # the flags as train.py reads them

    name, flags = argv[0], argv[1:]
    args = parse_args([*flags, "--out", "unused"])
    if name not in KNOWN:
        print(f"unknown bug {name}; known: {', '.join(sorted(KNOWN))}", file=sys.stderr)
        return 2
    missing = unmet(name, args)
    if missing:
        print(
            f"bug {name} needs {', '.join(missing)}, which this layout ({' '.join(flags)}) "
            f"lacks: its code would never run. Bugs this layout shows: "
            f"{', '.join(shown_by(args))}",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
