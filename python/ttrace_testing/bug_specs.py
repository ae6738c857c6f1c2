"""The bug-zoo matrix: for each bug, the parallel layout where it appears, the precisions it
is checked in, and where the engine must localize it.

`where` is a glob over the engine's localization (zoo_lib.py `_locate`): a module name
for activation and gradient bugs; `optimizer: GLOB` for bugs in gradient reduction or the
optimizer step, which no module's forward or backward holds (every module's `param_grad` is
clean; only `main_grad` / `param_after_step` diverge): every module whose state diverges
first must match GLOB (`*` when the bug hits every parameter).

`phase` is the phase of the report's first divergence (`first_divergence.phase` in
`ttrace diff --json`: forward, backward, gradient_reduction, optimizer_step): where the bug
enters, which is what names an optimizer-level bug."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BugSpec:
    bug: str
    config: str
    where: str
    phase: str
    precisions: tuple[str, ...] = ("fp32", "bf16")


SPECS: list[BugSpec] = [
    BugSpec("sp-norm-grad-not-reduced", "TP2", "optimizer: *layernorm", "gradient_reduction"),
    BugSpec("cp-attn-backward", "CP2", "layers.*.self_attention", "backward"),
    BugSpec("moe-router-not-synced", "TP2+MoE", "layers.1.mlp.router", "backward"),
    BugSpec("vocab-embedding-off-by-one", "TP2", "embedding", "forward"),
    BugSpec("vocab-ce-missing-allreduce", "TP2", "loss", "forward"),
    BugSpec("dp-grad-sum-not-mean", "DP2", "optimizer: *", "gradient_reduction"),
    BugSpec("grad-accum-scale", "PP2", "loss", "backward"),
    BugSpec("rope-cp-offset", "CP2", "layers.0.self_attention", "forward"),
    # Clipping scales main_grad in place before the capture reads it: the report's first
    # divergence is that main_grad, in the gradient-reduction phase (measured, seed 1, fp32).
    BugSpec("grad-clip-no-mp-reduce", "TP2+clip", "optimizer: *", "gradient_reduction"),
    BugSpec("dist-opt-wrong-offset", "DP2+dist-opt", "optimizer: *", "optimizer_step"),
    BugSpec("ep-dispatch-mismatch", "EP2", "layers.1.mlp", "forward"),
    BugSpec("tied-embedding-not-synced", "PP2+tied", "optimizer: embedding", "gradient_reduction"),
    BugSpec(
        "fp8-amax-not-reduced", "TP2", "layers.0.self_attention.linear_qkv", "forward", ("fp8",)
    ),
]
