"""Real Megatron-core (0.16.1) captured with zero annotations: a tiny `GPTModel` (local layer
spec, learned absolute positions) trained with Megatron's own `DistributedDataParallel`,
`get_megatron_optimizer` (Adam, grad clipping) and the no-pipelining schedule calling
`finalize_model_grads`, on gloo. A single-process reference (perturbations=2, whole-run
variants, the documented loop) against TP2, TP2 + sequence parallelism and TP2 x DP2 with
the distributed optimizer, in FP32; TP2 + SP also in BF16 (mixed-precision optimizer).

Each candidate must be clean at every captured iteration (exit 0, nothing invalid, missing
or divergent, optimizer state present); each bug injected into Megatron-core's reductions
(`megatron/bugs.py`) must be found with its module as the first forward divergence,
introduced there. The training script marks its ttrace lines with `# ttrace`: at most 10,
no `annotate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from job_runner import diff, run_module

SCRIPT = Path(__file__).resolve().parent / "megatron" / "gpt_train.py"
MAX_TTRACE_LINES = 10


@dataclass(frozen=True)
class Config:
    nproc: int
    args: tuple[str, ...]
    bf16: bool = False


CONFIGS = {
    "tp2": Config(2, ("--tp", "2")),
    "tp2_sp": Config(2, ("--tp", "2", "--sp")),
    "tp2_dp2": Config(4, ("--tp", "2", "--dist-optimizer")),
    "tp2_sp_bf16": Config(2, ("--tp", "2", "--sp", "--bf16"), bf16=True),
}
# Each bug once, each in another layout: the reduce-scatter path (SP), the all-reduce path
# (TP2), and under data parallelism with the distributed optimizer.
BUGS = {
    "drop_reduce": ("tp2_sp", "decoder.layers.0.mlp.linear_fc2"),
    "scale_rank": ("tp2", "decoder.layers.1.self_attention.linear_proj"),
    "bias_before_reduce": ("tp2_dp2", "decoder.layers.0.self_attention.linear_proj"),
}


def run(out: Path, nproc: int, args: tuple[str, ...] = (), bug: str = "none") -> None:
    run_module("tests.megatron.gpt_train", ["--out", str(out), *args, "--bug", bug], nproc, 900)


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    base = tmp_path_factory.mktemp("megatron-references")
    refs = {False: base / "fp32", True: base / "bf16"}
    run(refs[False], 1)
    run(refs[True], 1, ("--bf16",))
    return refs


def print_counts(name: str, report: dict) -> None:
    s = report["summary"]
    first = report["first_divergence"]["forward"]
    print(
        f"\n{name}: compared {s['compared']} invalid {s['invalid']} missing {s['missing']} "
        f"divergent {s['divergent']} first forward divergence {first}"
    )


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_clean_with_zero_annotations(
    name: str, references: dict[bool, Path], tmp_path: Path
) -> None:
    config = CONFIGS[name]
    cand = tmp_path / f"{name}-clean"
    run(cand, config.nproc, config.args)
    rc, report, text = diff(references[config.bf16], cand, tmp_path)
    print_counts(name, report)
    summary = report["summary"]
    assert (rc, summary["invalid"], summary["missing"], summary["divergent"]) == (0, 0, 0, 0), text
    assert summary["clean"] and summary["compared"] > 1000, text
    first = report["first_divergence"]
    assert (first["module"], first["forward"], first["backward"]) == (None, None, None), first
    clean = [t["id"] for t in report["tensors"] if t["status"] == "clean"]
    kinds = {i["kind"] for i in clean}
    assert {"optimizer_state", "param_grad", "main_grad", "input_grad", "output_grad"} <= kinds
    # Every iteration, attention heads, the skip-bias-add bias and its gradient, Adam state.
    assert {i["iteration"] for i in clean} == {0, 1}
    modules = {(i["module"], i["kind"], i["index"]) for i in clean}
    attention = "decoder.layers.0.self_attention"
    assert (f"{attention}.core_attention", "forward_input", "0") in modules
    assert (f"{attention}.core_attention.scale_mask_softmax", "forward_output", "0") in modules
    assert (f"{attention}.linear_proj", "output_grad", "1") in modules
    assert (f"{attention}.linear_qkv", "optimizer_state", "exp_avg.weight") in modules
    if config.bf16:
        assert (f"{attention}.linear_qkv", "optimizer_state", "main_param.weight") in modules


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_injected_bug_found_in_its_module(
    bug: str, references: dict[bool, Path], tmp_path: Path
) -> None:
    name, guilty = BUGS[bug]
    config = CONFIGS[name]
    cand = tmp_path / f"{name}-{bug}"
    run(cand, config.nproc, config.args, bug)
    rc, report, text = diff(references[config.bf16], cand, tmp_path)
    print_counts(f"{name} {bug}", report)
    summary = report["summary"]
    assert rc == 1 and summary["divergent"] > 0, text
    assert summary["invalid"] == 0 and summary["missing"] == 0, text
    assert report["first_divergence"]["forward"] == guilty, text
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    assert guilty in introduced, text


def test_training_script_needs_few_lines_and_no_annotations() -> None:
    text = SCRIPT.read_text()
    marked = [line for line in text.splitlines() if line.rstrip().endswith("# ttrace")]
    assert 0 < len(marked) <= MAX_TTRACE_LINES, marked
    assert "annotate" not in text and "ParallelInfo" not in text
    unmarked = [line for line in text.splitlines() if "ttc." in line and line not in marked]
    assert unmarked == []
