"""Zero-annotation capture of models nobody here wrote, under the parallelisms their users
apply: Hugging Face Llama with its own tensor-parallel plan, torch `parallelize_module`
TP + sequence parallelism with torch's styles, DDP and FSDP2 (`fully_shard`), each on 2 gloo
ranks against a single-process reference, compared by the real `ttrace diff` CLI.

Each configuration must be clean (exit 0, nothing invalid, missing or divergent, optimizer
state captured), and each injected bug (one rank's partial scaled by 1 + 1e-3 before its
reduction; one reduction dropped) must be found, with the guilty module as the first
forward divergence, introduced there. The training scripts (`frameworks/`) mark their
ttrace lines with `# ttrace`; there are at most 10 and no `annotate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from job_runner import diff, run_module

FRAMEWORKS = Path(__file__).resolve().parent / "frameworks"
MAX_TTRACE_LINES = 10


@dataclass(frozen=True)
class Config:
    script: str  # module under tests.frameworks
    reference: str  # which reference bundle ("hf" or "torch")
    guilty: str  # module the injected bugs sit in (a prefix for FSDP2's per-layer groups)
    gradient_bug: bool  # the bugs are in the gradient reduction, not in the forward


CONFIGS = {
    "hf_tp": Config("hf_tp", "hf", "model.layers.0.mlp.down_proj", False),
    "torch_tp_sp": Config("torch_tp", "torch", "layers.0.feed_forward.w2", False),
    "hf_ddp": Config("hf_ddp", "hf", "model.layers.0.mlp.down_proj", True),
    "hf_fsdp2": Config("hf_fsdp", "hf", "model.layers.0", True),
}


def run_script(script: str, out: Path, nproc: int, bug: str = "none") -> None:
    run_module(f"tests.frameworks.{script}", ["--out", str(out), "--bug", bug], nproc, 300)


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One single-process reference per model (perturbations=2), shared by its configs."""
    base = tmp_path_factory.mktemp("references")
    refs = {"hf": base / "hf", "torch": base / "torch"}
    run_script("hf_tp", refs["hf"], 1)
    run_script("torch_tp", refs["torch"], 1)
    return refs


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_clean_with_zero_annotations(
    name: str, references: dict[str, Path], tmp_path: Path
) -> None:
    config = CONFIGS[name]
    cand = tmp_path / f"{name}-clean"
    run_script(config.script, cand, 2)
    rc, report, text = diff(references[config.reference], cand, tmp_path)
    summary = report["summary"]
    assert (rc, summary["invalid"], summary["missing"], summary["divergent"]) == (0, 0, 0, 0), text
    assert summary["clean"] and summary["compared"] > 300, text
    kinds = {t["id"]["kind"] for t in report["tensors"] if t["status"] == "clean"}
    assert {"optimizer_state", "param_grad", "main_grad", "input_grad"} <= kinds
    # Hugging Face passes its inputs by keyword: they are captured under their keyword.
    indices = {t["id"]["index"] for t in report["tensors"] if t["id"]["kind"] == "forward_input"}
    if config.reference == "hf":
        assert {"input_ids", "hidden_states"} <= indices, sorted(indices)
    first = report["first_divergence"]
    assert (first["module"], first["forward"], first["backward"]) == (None, None, None), first


@pytest.mark.parametrize("bug", ["scale", "drop"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_injected_bug_found_in_its_module(
    name: str, bug: str, references: dict[str, Path], tmp_path: Path
) -> None:
    config = CONFIGS[name]
    cand = tmp_path / f"{name}-{bug}"
    run_script(config.script, cand, 2, bug)
    rc, report, text = diff(references[config.reference], cand, tmp_path)
    summary = report["summary"]
    assert rc == 1 and summary["divergent"] > 0, text
    assert summary["invalid"] == 0 and summary["missing"] == 0, text
    # A forward bug (tensor parallelism) is the first forward divergence; a gradient
    # reduction bug (DDP, FSDP2) the first backward one (forward tensors diverge only from
    # the next step on).
    first = report["first_divergence"]["backward" if config.gradient_bug else "forward"]
    assert first is not None and first.startswith(config.guilty), text
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    assert any(m.startswith(config.guilty) for m in introduced), text


@pytest.mark.parametrize("script", sorted({c.script for c in CONFIGS.values()}))
def test_training_scripts_need_few_lines_and_no_annotations(script: str) -> None:
    text = (FRAMEWORKS / f"{script}.py").read_text()
    marked = [line for line in text.splitlines() if line.rstrip().endswith("# ttrace")]
    assert 0 < len(marked) <= MAX_TTRACE_LINES, marked
    assert "annotate" not in text
    # Every use of ttrace is on a counted line.
    unmarked = [line for line in text.splitlines() if "ttc." in line and line not in marked]
    assert unmarked == []
