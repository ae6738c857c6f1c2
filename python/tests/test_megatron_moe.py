"""Real Megatron-core mixture of experts captured with zero annotations: the tiny
`GPTModel` of `megatron/gpt_train.py` with `--moe` (4 experts, top-2 routing, a `[b, s]`
padding mask, Megatron's `SequentialMLP` experts) on gloo, against a single-process
reference (perturbations=2):

- TP2 + sequence parallelism, no expert parallelism, all-gather dispatcher (experts split
  over the expert tensor-parallel group, which is the TP group);
- EP2 and EP2 x expert-DP2 with the all-to-all dispatcher (experts 2 and 3 live on EP rank
  1; each expert's tokens come from its EP group, by source rank);
- TP2 + SP with EP2 and expert tensor parallel size 1 (experts whole on every rank of a TP
  group, their gradients reduced over expert-DP, not TP);
- TP2 + SP with expert tensor parallel size 1 and no expert parallelism (every expert whole on
  both TP ranks, each rank's tokens its own, expert-DP 2 over the TP ranks). 0.16.1 marks
  expert weights for the expert-DP reduction only under EP > 1, so as shipped the TP ranks'
  expert gradients are never added (its own bug, named by the last test); the correct run
  applies the upstream fix (`--fix-expert-grad-groups`, a no-op on 0.19.2).

The file runs on the installed release: 0.16.1 (`.venv`, ctest entries `python_megatron_moe`
and `python_megatron_moe_etp1`) and 0.19.2 (`.venv312`, `python_megatron_latest_moe`: EP2 and
the two bugs injected under EP2; `python_megatron_latest_moe_layouts`: EP2 x expert-DP2 and
its missing expert-DP reduction, and both expert TP 1 layouts with an expert bug).

Each correct run must be clean (exit 0, nothing invalid, missing or divergent) and train the
same model: its loss equals the reference's at every step. Each injected bug
(`megatron/bugs.py`) must exit 1 with its module, or for the expert gradient reduction its
phase, named as the first divergence.

CPU shims of device calls only (`megatron/cpu_stubs.py`): the current device, literal
`device="cuda"`, `Tensor.type()`, the CUDA generator (the CPU one answers; the RNG tracker runs as
shipped), CUDA streams and events, the host copy of the dispatcher's split sizes, Transformer
Engine's router GEMM (absent) and Apex's layer-norm kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest
from job_runner import diff, run_module


@dataclass(frozen=True)
class Config:
    nproc: int
    args: tuple[str, ...]


ETP1_UNDER_TP2 = ("--tp", "2", "--sp", "--etp", "1")
CONFIGS = {
    "tp2_sp": Config(2, ("--tp", "2", "--sp", "--dispatcher", "allgather")),
    "ep2": Config(2, ("--ep", "2")),
    "ep2_edp2": Config(4, ("--ep", "2")),
    "tp2_sp_ep2_etp1": Config(4, ("--tp", "2", "--sp", "--ep", "2", "--etp", "1")),
    "tp2_sp_ep1_etp1": Config(2, (*ETP1_UNDER_TP2, "--fix-expert-grad-groups")),
}
EXPERTS = "decoder.layers.0.mlp.experts"


@dataclass(frozen=True)
class Bug:
    bug: str  # the name `megatron/bugs.py` injects
    layout: str
    module: str  # the first divergence: module and phase
    phase: str


BUGS = {
    "router_no_renorm": Bug("router_no_renorm", "ep2", "decoder.layers.0.mlp.router", "forward"),
    "unpermute_mismatch": Bug(
        "unpermute_mismatch", "tp2_sp_ep2_etp1", "decoder.layers.0.mlp", "forward"
    ),
    # Rank 1's `local_experts.0` is global expert 2: named by its global id.
    "expert_scale": Bug("expert_scale", "ep2", f"{EXPERTS}.local_experts.2.linear_fc2", "forward"),
    # Without EP, rank 1 (TP rank 1) holds every expert whole: its first is global expert 0,
    # scaled for rank 1's tokens only.
    "expert_scale_ep1_etp1": Bug(
        "expert_scale", "tp2_sp_ep1_etp1", f"{EXPERTS}.local_experts.0.linear_fc2", "forward"
    ),
    "expert_grad_not_reduced": Bug(
        "expert_grad_not_reduced",
        "ep2_edp2",
        f"{EXPERTS}.local_experts.0.linear_fc1",
        "gradient_reduction",
    ),
}


def run(out: Path, nproc: int, args: tuple[str, ...] = (), bug: str = "none") -> list[str]:
    """Run the job; its losses per step, as printed."""
    argv = ["--out", str(out), "--moe", *args, "--bug", bug]
    stdout = run_module("tests.megatron.gpt_train", argv, nproc, 600)
    return re.findall(r"step \d+ loss [0-9.]+", stdout)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    out = tmp_path_factory.mktemp("moe-reference") / "ref"
    losses = run(out, 1)
    return out, losses[:2]  # the nominal run's (its perturbed variants print theirs after)


def counts(name: str, report: dict, losses: list[str]) -> str:
    s = report["summary"]
    first = report["first_divergence"]
    line = (
        f"{name}: compared {s['compared']} divergent {s['divergent']} invalid {s['invalid']} "
        f"missing {s['missing']} first {first['module']} ({first['phase']}); {losses}"
    )
    print("\n" + line)
    return line


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_correct_moe_run_is_clean_and_trains_the_same_model(
    name: str, reference: tuple[Path, list[str]], tmp_path: Path
) -> None:
    ref, ref_losses = reference
    config = CONFIGS[name]
    cand = tmp_path / name
    losses = run(cand, config.nproc, config.args)
    assert losses == ref_losses and len(losses) == 2, (losses, ref_losses)
    rc, report, text = diff(ref, cand, tmp_path)
    counts(name, report, losses)
    s = report["summary"]
    assert (rc, s["invalid"], s["missing"], s["divergent"]) == (0, 0, 0, 0), text
    clean = {
        (t["id"]["module"], t["id"]["kind"], str(t["id"]["index"]))
        for t in report["tensors"]
        if t["status"] == "clean"
    }
    # Every expert under its global id, its activations, gradients and Adam state; the
    # router's [tokens, experts] outputs; the padding mask.
    for e in range(4):
        expert = f"{EXPERTS}.local_experts.{e}"
        assert (expert, "forward_input", "0") in clean
        assert (expert, "input_grad", "0") in clean
        assert (f"{expert}.linear_fc1", "main_grad", "weight") in clean
        assert (f"{expert}.linear_fc2", "optimizer_state", "exp_avg.weight") in clean
    assert ("decoder.layers.0.mlp.router", "forward_output", "0") in clean
    assert ("decoder.layers.0.mlp.router", "forward_output", "1") in clean
    assert ("decoder.layers.0.mlp", "forward_input", "padding_mask") in clean
    assert (EXPERTS, "forward_input", "1") in clean  # tokens per expert


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_moe_bug_is_named(bug: str, reference: tuple[Path, list[str]], tmp_path: Path) -> None:
    ref, _ = reference
    case = BUGS[bug]
    name, guilty, phase = case.layout, case.module, case.phase
    config = CONFIGS[name]
    cand = tmp_path / f"{name}-{bug}"
    losses = run(cand, config.nproc, config.args, case.bug)
    rc, report, text = diff(ref, cand, tmp_path)
    counts(f"{name} {bug}", report, losses)
    s = report["summary"]
    assert rc == 1 and s["divergent"] > 0, text
    assert s["invalid"] == 0 and s["missing"] == 0, text
    first = report["first_divergence"]
    assert (first["module"], first["phase"]) == (guilty, phase), first
    if phase == "forward":
        introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
        assert guilty in introduced, introduced
    else:
        assert "expert-grad-not-reduced" in main_grad_hints(report, guilty), text


def main_grad_hints(report: dict, module: str) -> set[str]:
    """The bug classes the report's hints give the main gradients of `module`."""
    return {
        (t.get("hint") or {}).get("bug_class", "")
        for t in report["tensors"]
        if t["id"]["module"] == module and t["id"]["kind"] == "main_grad"
    }


# Expert TP 1 under TP2 without expert parallelism, as each release ships it: 0.16.1 reduces
# the experts' gradients over data parallelism (size 1) instead of expert data parallelism
# (the two TP ranks), so each TP rank keeps its own tokens' part; 0.19.2 has the fix.
RELEASE_ETP1_EXPERT_GRADS = {"0.16.1": "not reduced", "0.19.2": "reduced"}


def test_release_reduces_expert_grads_under_etp1_as_shipped(
    reference: tuple[Path, list[str]], tmp_path: Path
) -> None:
    release = version("megatron-core")
    if release not in RELEASE_ETP1_EXPERT_GRADS:
        pytest.skip(f"megatron-core {release}: its expert gradient reduction is not established")
    ref, _ = reference
    cand = tmp_path / "tp2_sp_ep1_etp1-as-shipped"
    losses = run(cand, 2, ETP1_UNDER_TP2)
    rc, report, text = diff(ref, cand, tmp_path)
    counts(f"tp2_sp_ep1_etp1 as shipped ({release})", report, losses)
    s = report["summary"]
    assert s["invalid"] == 0 and s["missing"] == 0, text
    if RELEASE_ETP1_EXPERT_GRADS[release] == "reduced":
        assert (rc, s["divergent"]) == (0, 0), text
        return
    assert rc == 1 and s["divergent"] > 0, text
    first = report["first_divergence"]
    # Each TP rank's main_grad is its own part: the replicas over expert-DP disagree.
    assert first["module"] == f"{EXPERTS}.local_experts.0.linear_fc1", first
    assert first["phase"] == "gradient_reduction", first
    # The copies that disagree are expert-DP replicas (here the TP ranks), not a norm's.
    assert "expert-grad-not-reduced" in main_grad_hints(report, first["module"]), text
