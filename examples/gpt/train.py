"""Train the example GPT and capture a ttrace bundle.

Candidate (N = tp*pp*dp*cp processes):
    torchrun --standalone --nproc-per-node 4 -m examples.gpt.train --tp 2 --pp 2 --out cand
Reference (one process, same global batch):
    python -m examples.gpt.train --reference --perturbations 2 --out ref
Distributed reference (any layout; every rank perturbs its shard of the one global field):
    torchrun --standalone --nproc-per-node 2 -m examples.gpt.train --reference --tp 2 \
        --perturbations 2 --out ref
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import torch
import torch.distributed as dist

import ttrace.capture as ttc
from ttrace.bundle import RankRecord

from . import bugs
from . import checkpoint as ckpt
from .adam import AdamHyper
from .clip import clip_grad_norm
from .config import GPTConfig, ParallelConfig
from .data import global_batch, local_slice
from .dist_optimizer import DistributedOptimizer
from .grads import finalize_grads, is_expert
from .layers.attention import ATTENTION_KERNELS
from .layers.context import LayerContext
from .local_optimizer import LocalAdam
from .lr_schedule import LRSchedule
from .model import GPTStage
from .parallel_state import ParallelState
from .probe import install_probe
from .resume import resume
from .routing_replay import FILENAME as ROUTING_FILE
from .routing_replay import RoutingReplay
from .schedule import forward_backward_1f1b, forward_backward_no_pipelining


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    for name in ("tp", "pp", "dp", "cp", "ep"):
        a.add_argument(f"--{name}", type=int, default=1)
    a.add_argument(
        "--reference",
        action="store_true",
        help="reference run: one process, or in the layout the parallel sizes give (torchrun)",
    )
    a.add_argument("--no-sequence-parallel", action="store_true")
    a.add_argument(
        "--tie-embeddings",
        action="store_true",
        help="output layer uses the embedding weight (a synced copy on the last stage)",
    )
    a.add_argument("--dist-optimizer", action="store_true")
    a.add_argument("--sgd", action="store_true", help="SGD instead of Adam")
    a.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "bf16-autocast", "fp8"])
    a.add_argument(
        "--attention-kernel",
        default=os.environ.get("TTRACE_EXAMPLE_ATTENTION", "einsum"),
        choices=list(ATTENTION_KERNELS),
        help="attention implementation (both correct; env TTRACE_EXAMPLE_ATTENTION)",
    )
    a.add_argument("--hidden", type=int, default=32)
    a.add_argument("--layers", type=int, default=4)
    a.add_argument("--seq-len", type=int, default=16)
    a.add_argument("--experts", type=int, default=0, help="MoE experts (0: dense)")
    a.add_argument("--global-batch", type=int, default=4, help="sequences per micro-batch")
    a.add_argument("--micro-batches", type=int, default=2)
    a.add_argument("--iterations", type=int, default=2)
    a.add_argument("--capture", default="all", help="iterations to capture: all, none, or 0,1")
    a.add_argument("--perturbations", type=int, default=0, help="reference: perturbed variants")
    a.add_argument(
        "--perturb-scale",
        type=float,
        default=None,
        help="reference: relative perturbation size (default: eps of the perturbed tensor)",
    )
    a.add_argument("--seed", type=int, default=1234)
    a.add_argument(
        "--perturb-each-step",
        action="store_true",
        help="reference: perturb each step from the nominal state (not whole runs)",
    )
    a.add_argument("--out", default="ttrace-bundle")
    a.add_argument("--inject", action="append", default=[], help="bug-zoo bug name (repeat)")
    a.add_argument("--clip-grad", type=float, default=0.0, help="global-norm clip (0: off)")
    a.add_argument(
        "--probe-delta",
        default=None,
        metavar="MODULE:DELTA",
        help="calibration probe: scale MODULE's output by 1+DELTA on global rank 0",
    )
    a.add_argument(
        "--routing-replay",
        default=None,
        metavar="PATH",
        help="MoE: take each token's expert from the reference's routing file (the reference "
        f"writes OUT/{ROUTING_FILE}) instead of this run's own top-k",
    )
    a.add_argument("--stats", action="store_true", help="print timing/memory as JSON (rank 0)")
    a.add_argument("--lr-warmup", type=int, default=0, help="linear LR warm-up steps (0: off)")
    a.add_argument(
        "--save-checkpoint",
        default=None,
        metavar="DIR",
        help="after the last iteration, save model, optimizer, LR schedule step, random state "
        "and data position with torch distributed checkpoint (any layout loads it)",
    )
    a.add_argument(
        "--resume",
        default=None,
        metavar="DIR",
        help="start from the checkpoint DIR (resharded to this layout) instead of seeded "
        "weights; iterations and capture count from the resume",
    )
    return a.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    cfg = _gpt_config(args)
    single, pcfg = _parallel_config(args)
    bugs.check(pcfg.bugs)
    if not args.reference:
        bugs.check_layout(pcfg.bugs, args)
    if single:
        ps = ParallelState.single(pcfg)
    else:
        dist.init_process_group("gloo")
        ps = ParallelState.build(pcfg)
    ctx = _layer_context(args, ps, pcfg)
    info = ttc.ParallelInfo(
        tp=pcfg.tp, pp=pcfg.pp, dp=pcfg.dp, cp=pcfg.cp, ep=pcfg.ep,
        tp_rank=ps.tp_rank, pp_rank=ps.pp_rank, dp_rank=ps.dp_rank, cp_rank=ps.cp_rank,
    )  # fmt: skip

    def build() -> tuple[GPTStage, list[torch.nn.Parameter], LocalAdam | DistributedOptimizer]:
        return _build(args, cfg, ctx, ps, pcfg, info)

    record_routing = _routing_replay(args, ctx, ps, pcfg, single and cfg.num_experts > 0)

    model, params, optimizer = build()
    position, start = _resume_or_start(args, model, optimizer, ps, pcfg.bugs)
    lr_schedule = LRSchedule(optimizer.hyper.lr, args.lr_warmup, position.lr_step)
    if args.probe_delta and ps.rank == 0 and not args.reference:
        # Installed before the tracer's hooks so that the capture sees the probed output.
        install_probe(model, args.probe_delta)

    capture = _capture_iterations(args)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracer = _tracer(args, model, optimizer, capture, info, cfg.describe(), start)

    # Each micro-batch's loss is normalized by its token count; the schedule divides by the
    # number of micro-batches (as Megatron's does), so the gradient is the global mean.
    tokens = args.global_batch * cfg.seq_len
    act_dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    sp = pcfg.tp if ctx.sp else 1
    shape = (cfg.seq_len // pcfg.cp // sp, args.global_batch // pcfg.dp, cfg.hidden)
    # Per timed step, traced or not: wall, this thread's CPU, the process's CPU (the writer
    # thread included), minor page faults.
    step_times: dict[bool, list[tuple[float, float, float, int]]] = {True: [], False: []}

    def train_iteration(
        it: int,
        variants: Iterable[str],
        model: GPTStage = model,
        params: list[torch.nn.Parameter] = params,
        optimizer: LocalAdam | DistributedOptimizer = optimizer,
        step: Callable[[int], contextlib.AbstractContextManager] = tracer.step,
    ) -> None:
        ids, labels = global_batch(
            args.seed,
            position.data_iteration + it,
            args.micro_batches,
            args.global_batch,
            cfg.seq_len,
            cfg.vocab_size,
        )
        ids = local_slice(ids, ps.dp_rank, pcfg.dp, ps.cp_rank, pcfg.cp)
        labels = local_slice(labels, ps.dp_rank, pcfg.dp, ps.cp_rank, pcfg.cp)

        def forward_step(
            i: int, x: torch.Tensor | None, ids: torch.Tensor = ids, labels: torch.Tensor = labels
        ) -> torch.Tensor:
            autocast = torch.autocast(
                "cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16-autocast"
            )
            if ctx.routing is not None:
                ctx.routing.micro_batch = i
            with autocast:
                out = model(ids[i] if ps.is_first_stage else x, labels[i])
            if ps.is_last_stage:
                # Normalized by the global micro-batch token count: each rank holds a partial sum.
                return out.float().sum() / tokens
            return out

        for _variant in variants:
            if ps.cfg.world_size > 1:
                dist.barrier()
            t0 = _step_clock()
            optimizer.zero_grad()
            if ctx.routing is not None:
                ctx.routing.iteration = it
            with step(it):
                if pcfg.pp > 1:
                    forward_backward_1f1b(forward_step, args.micro_batches, ps, shape, act_dtype)
                else:
                    forward_backward_no_pipelining(forward_step, args.micro_batches, pcfg.bugs)
                finalize_grads(params, ps, optimizer if pcfg.dist_optimizer else None)
                if args.clip_grad > 0:
                    norm = clip_grad_norm(params, args.clip_grad, ps)
                    # Clipping by its own code: no torch function records it for the comparison.
                    ttc.record_gradient_clip(norm, args.clip_grad, "examples.gpt.clip")
                optimizer.hyper.lr = lr_schedule.lr(it)
                optimizer.step()
            # Iteration 0 includes warm-up; the untraced routing-record pass is not timed.
            if _variant == "nominal" and it > 0 and step == tracer.step:
                step_times[it in capture].append(_step_clock(t0))

    if record_routing and args.perturbations > 0:
        # The perturbed variants run before the nominal one and must replay its routing:
        # record it first in an untraced nominal run of a fresh copy of the model.
        pre_model, pre_params, pre_opt = build()
        untraced = lambda _it: contextlib.nullcontext()  # noqa: E731
        for it in range(args.iterations):
            train_iteration(it, ["nominal"], pre_model, pre_params, pre_opt, untraced)
        del pre_model, pre_params, pre_opt
        ctx.routing.mode = "replay"

    if args.perturb_each_step:
        for it in range(args.iterations):
            train_iteration(it, tracer.variants(it))
    else:
        # Whole-run perturbation: each perturbed variant re-runs every iteration from the
        # initial state, so its floors include the round-off carried from step to step.
        for variant in tracer.run_variants():
            for it in range(args.iterations):
                train_iteration(it, [variant])

    record, drain_s = _finish(
        args, tracer, model, optimizer, ps, position, lr_schedule, record_routing, ctx
    )
    if args.stats and ps.rank == 0:
        _print_stats(tracer, record, capture, step_times, drain_s, rss0)
    if not single:
        dist.barrier()
        dist.destroy_process_group()


def _gpt_config(args: argparse.Namespace) -> GPTConfig:
    return GPTConfig(
        hidden=args.hidden,
        layers=args.layers,
        seq_len=args.seq_len,
        num_experts=args.experts,
        precision=args.precision,
        attention_kernel=args.attention_kernel,
    )


def _build(
    args: argparse.Namespace,
    cfg: GPTConfig,
    ctx: LayerContext,
    ps: ParallelState,
    pcfg: ParallelConfig,
    info: ttc.ParallelInfo,
) -> tuple[GPTStage, list[torch.nn.Parameter], LocalAdam | DistributedOptimizer]:
    """This rank's stage of the model, seeded as every layout seeds it, and its optimizer."""
    model = GPTStage(cfg, ctx, ps.pp_rank, pcfg.pp, tie_embeddings=args.tie_embeddings)
    ttc.seeded_init(model, args.seed, parallel=info)
    params = [p for p in model.parameters()]
    hyper = AdamHyper(sgd=args.sgd)
    if pcfg.dist_optimizer:
        optimizer = DistributedOptimizer(
            [p for p in params if not is_expert(p)],
            hyper,
            ps.group("dp_cp"),
            local_params=[p for p in params if is_expert(p)],
            bugs=pcfg.bugs,
        )
    else:
        optimizer = LocalAdam(params, hyper)
    return model, params, optimizer


def _parallel_config(args: argparse.Namespace) -> tuple[bool, ParallelConfig]:
    """(whether this is a single-process reference, the run's parallel configuration)."""
    # A reference with parallel sizes runs in that layout (a distributed reference).
    single = args.reference and args.tp * args.pp * args.dp * args.cp == 1
    pcfg = (
        ParallelConfig(bugs=set(args.inject))
        if single
        else ParallelConfig(
            args.tp,
            args.pp,
            args.dp,
            args.cp,
            args.ep,
            sequence_parallel=not args.no_sequence_parallel,
            dist_optimizer=args.dist_optimizer,
            bugs=set(args.inject),
        )
    )
    return single, pcfg


def _layer_context(
    args: argparse.Namespace, ps: ParallelState, pcfg: ParallelConfig
) -> LayerContext:
    """What every layer of this rank needs: its groups, the precision and the bugs."""
    params_dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    return LayerContext(
        tp_group=ps.group("tp"),
        cp_group=ps.group("cp"),
        ep_group=ps.group("ep"),
        amax_group=ps.group("amax"),
        sequence_parallel=pcfg.sequence_parallel,
        precision=args.precision,
        bugs=pcfg.bugs,
        params_dtype=params_dtype,
    )


def _capture_iterations(args: argparse.Namespace) -> list[int]:
    """The iterations `--capture` names: all, none, or a comma-separated list."""
    return (
        list(range(args.iterations))
        if args.capture == "all"
        else []
        if args.capture == "none"
        else [int(x) for x in args.capture.split(",")]
    )


def _finish(
    args: argparse.Namespace,
    tracer: ttc.Tracer,
    model: GPTStage,
    optimizer: LocalAdam | DistributedOptimizer,
    ps: ParallelState,
    position: ckpt.Position,
    lr_schedule: LRSchedule,
    record_routing: bool,
    ctx: LayerContext,
) -> tuple[RankRecord, float]:
    """Ends the capture (the writer drained, the bundle closed), then saves the checkpoint and
    the recorded routing when asked; (the rank's record, the drain's seconds)."""
    drain_start = time.perf_counter()
    tracer.flush()  # what the writer still had to do after the last step
    drain_s = time.perf_counter() - drain_start
    record = tracer.close()
    if args.save_checkpoint:
        done = ckpt.Position(
            optimizer.step_count,
            lr_schedule.start + args.iterations,
            position.data_iteration + args.iterations,
        )
        ckpt.save(Path(args.save_checkpoint), model, optimizer, ps, done)
    if record_routing:
        ctx.routing.save(Path(args.out) / ROUTING_FILE)
    return record, drain_s


def _print_stats(
    tracer: ttc.Tracer,
    record: RankRecord,
    capture: list[int],
    step_times: dict[bool, list[tuple[float, float, float, int]]],
    drain_s: float,
    rss0: int,
) -> None:
    """`--stats`: the step times traced and untraced and the capture's costs, one JSON line."""
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    traced, untraced = step_times[True], step_times[False]
    stats = {
        "step_s_traced": _mean([x[0] for x in traced]),
        "step_s_untraced": _mean([x[0] for x in untraced]),
        "step_cpu_s_traced": _mean([x[1] for x in traced]),
        "step_cpu_s_untraced": _mean([x[1] for x in untraced]),
        "process_cpu_s_traced": _mean([x[2] for x in traced]),
        "process_cpu_s_untraced": _mean([x[2] for x in untraced]),
        "page_faults_traced": _mean([x[3] for x in traced]),
        "page_faults_untraced": _mean([x[3] for x in untraced]),
        # Capture phases per captured step (docs/performance.md, "Capture").
        "phases_s": {k: v / max(1, len(capture)) for k, v in tracer.phases.snapshot().items()},
        "drain_s": drain_s,
        "bytes_per_traced_step": record.bytes / max(1, len(capture)),
        "tensors": record.tensors,
        "peak_pending_bytes": tracer.writer.peak_pending_bytes,
        "maxrss_delta_kib": rss1 - rss0,
    }
    print("TTRACE_STATS " + json.dumps(stats), flush=True)


def _routing_replay(
    args: argparse.Namespace,
    ctx: LayerContext,
    ps: ParallelState,
    pcfg: ParallelConfig,
    records: bool,
) -> bool:
    """Sets the layers' routing replay; True when this run records it (`records`: a
    single-process reference of a model with experts)."""
    # Routing replay: the reference records its (nominal) expert choices; a candidate given
    # --routing-replay replays them, so a round-off flip of a near tie cannot reroute a token.
    # (Recorded by a single-process reference: one file, written by its one process.)
    record_routing = records and args.routing_replay is None
    if args.routing_replay is not None:
        ctx.routing = RoutingReplay.load(
            Path(args.routing_replay), (ps.dp_rank, pcfg.dp), (ps.cp_rank, pcfg.cp)
        )
    elif record_routing:
        ctx.routing = RoutingReplay("record")
    return record_routing


def _tracer(
    args: argparse.Namespace,
    model: GPTStage,
    optimizer: LocalAdam | DistributedOptimizer,
    capture: list[int],
    info: ttc.ParallelInfo,
    model_name: str,
    start: dict | None,
) -> ttc.Tracer:
    """The capture: this run's role, iterations, layout, precision and perturbed variants."""
    return ttc.Tracer(
        model,
        optimizer,
        args.out,
        role="reference" if args.reference else "candidate",
        iterations=capture,
        parallel=info,
        precision=args.precision,
        perturbations=ttc.Perturbation(
            count=args.perturbations if args.reference else 0, relative_scale=args.perturb_scale
        ),
        model_name=model_name,
        start=start,
    )


def _resume_or_start(
    args: argparse.Namespace,
    model: GPTStage,
    optimizer: LocalAdam | DistributedOptimizer,
    ps: ParallelState,
    bug_names: set[str],
) -> tuple[ckpt.Position, dict | None]:
    """The position this run starts from and, after a resume, the manifest's record of it."""
    if args.save_checkpoint or args.resume:
        if args.experts:
            raise SystemExit("--save-checkpoint/--resume: dense models only (no --experts)")
        try:
            ckpt.check_supported(ps, optimizer)
        except ckpt.ResumeError as e:
            raise SystemExit(str(e)) from e
    if args.resume is None:
        return ckpt.Position(0, 0, 0), None
    assert isinstance(optimizer, LocalAdam)  # check_supported refused any other
    try:
        return resume(Path(args.resume), model, optimizer, ps, bug_names)
    except ckpt.ResumeError as e:
        raise SystemExit(str(e)) from e


def _step_clock(
    start: tuple[float, float, float, int] | None = None,
) -> tuple[float, float, float, int]:
    """(wall, thread CPU, process CPU, minor page faults) now, or elapsed since `start`."""
    now = (
        time.perf_counter(),
        time.thread_time(),
        time.process_time(),
        resource.getrusage(resource.RUSAGE_SELF).ru_minflt,
    )
    if start is None:
        return now
    return (now[0] - start[0], now[1] - start[1], now[2] - start[2], now[3] - start[3])


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


if __name__ == "__main__":
    main()
