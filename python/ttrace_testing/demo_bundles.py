"""Write a small reference bundle and a matching TP2xDP2 candidate bundle.

    python -m ttrace_testing.demo_bundles OUTDIR [--inject-bug]

The model is a two-layer residual MLP (RMSNorm -> Linear -> GELU -> Linear) trained for two
iterations of two micro-batches with SGD + momentum, in float32 on the CPU. The reference
runs it whole (variants ``nominal`` and ``perturbed-1..2``); the candidate simulates four
ranks (rank = dp * 2 + tp) by really slicing weights and batches and really computing
partial matmuls, with Megatron-style autograd functions standing in for the all-reduces.
So merged candidate tensors differ from the reference only by round-off, exercising every
combine mode: ``copy`` (column-parallel outputs), ``sum`` (row-parallel partial outputs,
per-micro-batch gradients before the data-parallel reduction, the loss), ``replica``
(replicated norm weights, activations shared across tensor-parallel ranks) and ``flat``
(the distributed optimizer's momentum shards).

``--inject-bug`` drops one term of the row-parallel partial sum of ``layers.1.mlp.fc2``
on rank 1 (tp 1, dp 0): a silent bug a later diff must find.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from ttrace.bundle import BundleWriter, Placement, RankRecord, TensorKey, write_manifest

HIDDEN, FFN, BATCH = 16, 32, 8
LAYERS, ITERATIONS, MICRO_BATCHES = 2, 2, 2
TP, DP = 2, 2
LR, MOMENTUM = 0.05, 0.9
PERTURB_SEEDS = (1, 2)
PERTURB_SCALE = 2.0**-23  # one float32 machine epsilon, relative
BUGGY_RANK, BUGGY_MODULE = 1, "layers.1.mlp.fc2"

# Records one tensor: (module, kind, index, micro_batch, tensor, placement or None).
Record = Callable[[str, str, str, int, torch.Tensor, Placement | None], None]


def param_names() -> list[str]:
    return [
        f"layers.{i}.{part}.weight"
        for i in range(LAYERS)
        for part in ("norm", "mlp.fc1", "mlp.fc2")
    ]


def initial_weights() -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    weights = {}
    for i in range(LAYERS):
        weights[f"layers.{i}.norm.weight"] = 1.0 + 0.1 * torch.randn(HIDDEN, generator=generator)
        weights[f"layers.{i}.mlp.fc1.weight"] = torch.randn(FFN, HIDDEN, generator=generator) / 4
        weights[f"layers.{i}.mlp.fc2.weight"] = torch.randn(HIDDEN, FFN, generator=generator) / 6
    return weights


def batch(iteration: int, micro_batch: int, perturb_seed: int | None) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1000 + iteration * MICRO_BATCHES + micro_batch)
    x = torch.randn(BATCH, HIDDEN, generator=generator)
    if perturb_seed is not None:
        # About one ulp per element, as the paper's empirical tolerance prescribes.
        noise = torch.Generator().manual_seed(perturb_seed * 7919 + iteration * 31 + micro_batch)
        u = torch.rand(BATCH, HIDDEN, generator=noise) * 2 - 1
        x = x + x * (PERTURB_SCALE * u)
    return x


def rms_norm(h: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * weight


def modules_table(candidate: bool) -> list[dict[str, Any]]:
    """Execution order: each layer, then its children as their forwards start."""
    table: list[dict[str, Any]] = []
    fc1_type = "ColumnParallelLinear" if candidate else "Linear"
    fc2_type = "RowParallelLinear" if candidate else "Linear"
    for i in range(LAYERS):
        for name, type_name in (
            (f"layers.{i}", "DemoLayer"),
            (f"layers.{i}.norm", "RMSNorm"),
            (f"layers.{i}.mlp.fc1", fc1_type),
            (f"layers.{i}.mlp.act", "GELU"),
            (f"layers.{i}.mlp.fc2", fc2_type),
        ):
            table.append({"name": name, "order": len(table), "depth": i, "type": type_name})
    table.append({"name": "loss", "order": len(table), "depth": LAYERS, "type": "MeanSquareLoss"})
    return table


# --- reference ------------------------------------------------------------------------------


def run_reference(record_for: Callable[[str, int], Record], variants: Sequence[str]) -> None:
    for variant_number, variant in enumerate(variants):
        seed = None if variant_number == 0 else PERTURB_SEEDS[variant_number - 1]
        weights = {n: w.clone().requires_grad_(True) for n, w in initial_weights().items()}
        momentum: dict[str, torch.Tensor] = {}
        for iteration in range(ITERATIONS):
            record = record_for(variant, iteration)
            main_grad = {n: torch.zeros_like(w) for n, w in weights.items()}
            for mb in range(MICRO_BATCHES):
                h = batch(iteration, mb, seed)
                kept: list[tuple[str, str, torch.Tensor]] = []
                for i in range(LAYERS):
                    p = f"layers.{i}"
                    record(p, "forward_input", "0", mb, h, None)
                    n = rms_norm(h, weights[f"{p}.norm.weight"])
                    a = n @ weights[f"{p}.mlp.fc1.weight"].T
                    g = torch.nn.functional.gelu(a)
                    o = g @ weights[f"{p}.mlp.fc2.weight"].T
                    y = h + o
                    for t in (n, o):
                        t.retain_grad()
                    kept += [(f"{p}.norm", "n", n), (f"{p}.mlp.fc2", "o", o)]
                    record(f"{p}.norm", "forward_output", "0", mb, n, None)
                    record(f"{p}.mlp.fc1", "forward_output", "0", mb, a, None)
                    record(f"{p}.mlp.act", "forward_output", "0", mb, g, None)
                    record(f"{p}.mlp.fc2", "forward_input", "0", mb, g, None)
                    record(f"{p}.mlp.fc2", "forward_output", "0", mb, o, None)
                    record(p, "forward_output", "0", mb, y, None)
                    h = y
                loss = h.pow(2).sum() / (BATCH * HIDDEN)
                record("loss", "forward_output", "0", mb, loss, None)
                loss.backward()
                for module, which, t in kept:
                    assert t.grad is not None
                    if which == "n":
                        # n feeds only fc1, so its gradient is both of these.
                        record(module, "output_grad", "0", mb, t.grad, None)
                        fc1 = module.removesuffix("norm") + "mlp.fc1"
                        record(fc1, "input_grad", "0", mb, t.grad, None)
                    else:
                        record(module, "output_grad", "0", mb, t.grad, None)
                for name, w in weights.items():
                    assert w.grad is not None
                    record(name.removesuffix(".weight"), "param_grad", "weight", mb, w.grad, None)
                    main_grad[name] += w.grad
                    w.grad = None
            with torch.no_grad():
                for name, w in weights.items():
                    module = name.removesuffix(".weight")
                    record(module, "parameter", "weight", -1, w, None)
                    record(module, "main_grad", "weight", -1, main_grad[name], None)
                    buf = momentum.get(name)
                    buf = (
                        main_grad[name].clone() if buf is None else buf * MOMENTUM + main_grad[name]
                    )
                    momentum[name] = buf
                    record(module, "optimizer_state", "momentum_buffer.weight", -1, buf, None)
                    w -= LR * buf
                    record(module, "param_after_step", "weight", -1, w, None)


# --- candidate ------------------------------------------------------------------------------


class CopyToTensorParallel(torch.autograd.Function):
    """Megatron's `f`: identity forward; backward all-reduces the TP ranks' gradients."""

    @staticmethod
    def forward(ctx: Any, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(x.clone() for x in inputs)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor, ...]:
        total = grads[0]
        for g in grads[1:]:
            total = total + g
        return tuple(total.clone() for _ in grads)


class ReduceFromTensorParallel(torch.autograd.Function):
    """Megatron's `g`: forward all-reduces partial sums; backward is the identity per rank."""

    @staticmethod
    def forward(ctx: Any, *partials: torch.Tensor) -> tuple[torch.Tensor, ...]:
        total = partials[0]
        for p in partials[1:]:
            total = total + p
        return tuple(total.clone() for _ in partials)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return grads


def rank_of(dp: int, tp: int) -> int:
    return dp * TP + tp


def local_weights(full: dict[str, torch.Tensor], tp: int) -> dict[str, torch.Tensor]:
    """Rank's slice of every parameter: norm replicated, fc1 by rows, fc2 by columns."""
    cols = slice(tp * FFN // TP, (tp + 1) * FFN // TP)
    local = {}
    for name, w in full.items():
        if name.endswith("fc1.weight"):
            local[name] = w[cols].clone()
        elif name.endswith("fc2.weight"):
            local[name] = w[:, cols].clone()
        else:
            local[name] = w.clone()
    return local


def weight_placement(name: str, tp: int, combine: str) -> Placement:
    if name.endswith("fc1.weight"):
        return Placement.split((FFN, HIDDEN), 0, tp, TP, combine=combine)
    if name.endswith("fc2.weight"):
        return Placement.split((HIDDEN, FFN), 1, tp, TP, combine=combine)
    return Placement.full((HIDDEN,), combine=combine)


def optimizer_shard(
    name: str, tp: int, dp: int, local: torch.Tensor
) -> tuple[torch.Tensor, Placement]:
    """The distributed optimizer's shard: dp rank `dp` owns half of the flattened local shard."""
    flat = local.reshape(-1)
    half = flat.numel() // DP
    piece = flat[dp * half : (dp + 1) * half].clone()
    if name.endswith("fc1.weight"):
        # A TP row block is contiguous in the flattened global tensor: one range.
        start = tp * flat.numel() + dp * half
        return piece, Placement.flat((FFN, HIDDEN), [(0, start, half)])
    if name.endswith("fc2.weight"):
        # A TP column block is not: one range per local row.
        width = FFN // TP
        rows = range(dp * HIDDEN // DP, (dp + 1) * HIDDEN // DP)
        ranges = [(k * width, r * FFN + tp * width, width) for k, r in enumerate(rows)]
        return piece, Placement.flat((HIDDEN, FFN), ranges)
    # The norm weight is replicated across TP, so TP ranks' ranges overlap: replica.
    return piece, Placement.flat((HIDDEN,), [(0, dp * half, half)], combine="replica")


def run_candidate(record_for: Callable[[int, int], Record], inject_bug: bool) -> None:
    full = initial_weights()
    weights = {
        rank_of(d, t): {n: w.requires_grad_(True) for n, w in local_weights(full, t).items()}
        for d in range(DP)
        for t in range(TP)
    }
    momentum: dict[int, dict[str, torch.Tensor]] = {r: {} for r in weights}
    rows_per_dp = BATCH // DP
    ffn_per_tp = FFN // TP

    def rows(d: int, width: int, combine: str, partial: int | None = None) -> Placement:
        box = [(0, d * rows_per_dp, rows_per_dp), (0, 0, width)]
        return Placement.boxes((BATCH, width), [box], combine=combine, partial_index=partial)

    def tile(d: int, t: int) -> Placement:
        box = [(0, d * rows_per_dp, rows_per_dp), (0, t * ffn_per_tp, ffn_per_tp)]
        return Placement.boxes((BATCH, FFN), [box])

    for iteration in range(ITERATIONS):
        records = {r: record_for(r, iteration) for r in weights}
        main_grad = {
            r: {n: torch.zeros_like(w) for n, w in ws.items()} for r, ws in weights.items()
        }
        for mb in range(MICRO_BATCHES):
            x = batch(iteration, mb, None)
            for d in range(DP):
                ranks = [rank_of(d, t) for t in range(TP)]
                # Every TP rank of a DP group loads the same micro-batch rows.
                hs = [x[d * rows_per_dp : (d + 1) * rows_per_dp].clone() for _ in ranks]
                grads_to_record: list[tuple[int, int, str, torch.Tensor, torch.Tensor]] = []
                for i in range(LAYERS):
                    p = f"layers.{i}"
                    ns = [
                        rms_norm(h, weights[r][f"{p}.norm.weight"])
                        for h, r in zip(hs, ranks, strict=True)
                    ]
                    n_in = CopyToTensorParallel.apply(*ns)
                    partials = []
                    for t, r in enumerate(ranks):
                        a = n_in[t] @ weights[r][f"{p}.mlp.fc1.weight"].T
                        g = torch.nn.functional.gelu(a)
                        w2 = weights[r][f"{p}.mlp.fc2.weight"]
                        if inject_bug and r == BUGGY_RANK and f"{p}.mlp.fc2" == BUGGY_MODULE:
                            o = g[:, :-1] @ w2[:, :-1].T  # the bug: one term of the sum is lost
                        else:
                            o = g @ w2.T
                        partials.append(o)
                        rec = records[r]
                        rec(p, "forward_input", "0", mb, hs[t], rows(d, HIDDEN, "replica"))
                        rec(
                            f"{p}.norm",
                            "forward_output",
                            "0",
                            mb,
                            ns[t],
                            rows(d, HIDDEN, "replica"),
                        )
                        rec(f"{p}.mlp.fc1", "forward_output", "0", mb, a, tile(d, t))
                        rec(f"{p}.mlp.act", "forward_output", "0", mb, g, tile(d, t))
                        rec(f"{p}.mlp.fc2", "forward_input", "0", mb, g, tile(d, t))
                        rec(f"{p}.mlp.fc2", "forward_output", "0", mb, o, rows(d, HIDDEN, "sum", t))
                    for t in range(TP):
                        ns[t].retain_grad()
                        n_in[t].retain_grad()
                        partials[t].retain_grad()
                        grads_to_record += [
                            (ranks[t], t, f"{p}.norm", ns[t], n_in[t]),
                            (ranks[t], t, f"{p}.mlp.fc2", partials[t], partials[t]),
                        ]
                    summed = ReduceFromTensorParallel.apply(*partials)
                    hs = [h + s for h, s in zip(hs, summed, strict=True)]
                    for t, r in enumerate(ranks):
                        records[r](p, "forward_output", "0", mb, hs[t], rows(d, HIDDEN, "replica"))
                # Each DP rank's share of the global mean: partial sums over DP.
                losses = [h.pow(2).sum() / (BATCH * HIDDEN) for h in hs]
                for r, loss in zip(ranks, losses, strict=True):
                    records[r](
                        "loss", "forward_output", "0", mb, loss, Placement.full(()).with_partial(d)
                    )
                torch.autograd.backward(losses)
                for r, t, module, out, inp in grads_to_record:
                    assert out.grad is not None and inp.grad is not None
                    records[r](module, "output_grad", "0", mb, out.grad, rows(d, HIDDEN, "replica"))
                    if module.endswith("norm"):
                        fc1 = module.removesuffix("norm") + "mlp.fc1"
                        placement = rows(d, HIDDEN, "sum", t)  # before fc1's backward all-reduce
                        records[r](fc1, "input_grad", "0", mb, inp.grad, placement)
                for t, r in enumerate(ranks):
                    for name, w in weights[r].items():
                        assert w.grad is not None
                        placement = weight_placement(name, t, "sum").with_partial(d)
                        module = name.removesuffix(".weight")
                        records[r](module, "param_grad", "weight", mb, w.grad, placement)
                        main_grad[r][name] += w.grad
                        w.grad = None
        with torch.no_grad():
            # Data-parallel all-reduce of the accumulated gradients.
            for t in range(TP):
                group = [rank_of(d, t) for d in range(DP)]
                for name in main_grad[group[0]]:
                    total = main_grad[group[0]][name]
                    for r in group[1:]:
                        total = total + main_grad[r][name]
                    for r in group:
                        main_grad[r][name] = total.clone()
            for r, ws in weights.items():
                d, t = divmod(r, TP)
                for name, w in ws.items():
                    module = name.removesuffix(".weight")
                    rec = records[r]
                    rec(module, "parameter", "weight", -1, w, weight_placement(name, t, "replica"))
                    grad = main_grad[r][name]
                    rec(
                        module,
                        "main_grad",
                        "weight",
                        -1,
                        grad,
                        weight_placement(name, t, "replica"),
                    )
                    buf = momentum[r].get(name)
                    buf = grad.clone() if buf is None else buf * MOMENTUM + grad
                    momentum[r][name] = buf
                    shard, placement = optimizer_shard(name, t, d, buf)
                    rec(module, "optimizer_state", "momentum_buffer.weight", -1, shard, placement)
                    w -= LR * buf
                    rec(
                        module,
                        "param_after_step",
                        "weight",
                        -1,
                        w,
                        weight_placement(name, t, "replica"),
                    )


# --- driver ---------------------------------------------------------------------------------


def _recorder(writer: BundleWriter, variant: str, iteration: int) -> Record:
    def record(
        module: str,
        kind: str,
        index: str,
        micro_batch: int,
        tensor: torch.Tensor,
        placement: Placement | None,
    ) -> None:
        key = TensorKey(variant, iteration, micro_batch, module, kind, index)
        writer.write(key, tensor, placement)

    return record


def write_reference(directory: Path) -> RankRecord:
    variants = ["nominal", *(f"perturbed-{s}" for s in range(1, len(PERTURB_SEEDS) + 1))]
    with BundleWriter(directory, rank=0, world_size=1, role="reference") as writer:
        run_reference(lambda variant, it: _recorder(writer, variant, it), variants)
    record = writer.close()
    write_manifest(
        directory,
        role="reference",
        world_size=1,
        parallel={},
        precision="fp32",
        variants=variants,
        perturbation={
            "scheme": "relative-uniform",
            "relative_scale": PERTURB_SCALE,
            "seeds": list(PERTURB_SEEDS),
        },
        modules=modules_table(candidate=False),
        iterations=list(range(ITERATIONS)),
        micro_batches=MICRO_BATCHES,
        ranks=[record],
        model=f"ttrace.demo_bundles (hidden {HIDDEN}, ffn {FFN}, layers {LAYERS}, batch {BATCH})",
    )
    return record


def write_candidate(directory: Path, inject_bug: bool) -> list[RankRecord]:
    writers = {
        rank_of(d, t): BundleWriter(
            directory,
            rank=rank_of(d, t),
            world_size=TP * DP,
            role="candidate",
            coords={"tp": t, "dp": d},
        )
        for d in range(DP)
        for t in range(TP)
    }
    try:
        run_candidate(lambda r, it: _recorder(writers[r], "nominal", it), inject_bug)
    finally:
        records = [writers[r].close() for r in sorted(writers)]
    bug = f", bug: {BUGGY_MODULE} on rank {BUGGY_RANK}" if inject_bug else ""
    write_manifest(
        directory,
        role="candidate",
        world_size=TP * DP,
        parallel={"tp": TP, "dp": DP},
        precision="fp32",
        variants=["nominal"],
        modules=modules_table(candidate=True),
        iterations=list(range(ITERATIONS)),
        micro_batches=MICRO_BATCHES,
        ranks=records,
        model=(
            f"ttrace.demo_bundles TP{TP}xDP{DP} (hidden {HIDDEN}, ffn {FFN}, layers {LAYERS}{bug})"
        ),
    )
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ttrace_testing.demo_bundles", description=__doc__.split("\n")[0]
    )
    parser.add_argument("outdir", type=Path, help="writes OUTDIR/reference and OUTDIR/candidate")
    parser.add_argument(
        "--inject-bug",
        action="store_true",
        help=f"drop one term of {BUGGY_MODULE}'s partial sum on rank {BUGGY_RANK}",
    )
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    reference = write_reference(args.outdir / "reference")
    print(
        f"{args.outdir / 'reference'}: 1 rank, {reference.tensors} tensors, {reference.bytes} bytes"
    )
    candidate = write_candidate(args.outdir / "candidate", args.inject_bug)
    for rec in candidate:
        print(
            f"{args.outdir / 'candidate' / rec.file}: rank {rec.rank} coords {rec.coords}, "
            f"{rec.tensors} tensors, {rec.bytes} bytes"
        )
    if args.inject_bug:
        print(f"injected bug: {BUGGY_MODULE} forward_output on rank {BUGGY_RANK} misses a term")
    return 0


if __name__ == "__main__":
    sys.exit(main())
