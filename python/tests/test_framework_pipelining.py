"""torch.distributed.pipelining captured with zero annotations: the tutorial's split model
(`frameworks/torch_pipelining.py`), one `PipelineStage` per rank on 2 gloo ranks, passed to
`Tracer` as it is; `ScheduleGPipe` and `Schedule1F1B`, with the tutorial's default dynamic
shapes (the stage infers them at the first step) and with static `input_args`/`output_args`,
against a single-process reference that accumulates micro-batches as the schedule does.

Every correct run must be clean (exit 0, nothing invalid, missing or divergent), the shape
inference filed as no micro-batch, the hand-off between the stages compared on both sides.
A last stage that skips the schedule's gradient scaling must be named: its modules, and only
its, diverge at the gradient reduction of the first iteration, by the number of micro-batches.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from job_runner import diff, run_module, summary_text

SCRIPT = Path(__file__).resolve().parent / "frameworks" / "torch_pipelining.py"
MODULE = "tests.frameworks.torch_pipelining"
CONFIGS = {
    "gpipe_dynamic": (),
    "gpipe_static": ("--static-shapes",),
    "1f1b_dynamic": ("--schedule", "1f1b"),
    "1f1b_static": ("--schedule", "1f1b", "--static-shapes"),
}
STAGE_1 = ("layers.2", "layers.3", "norm", "output")


def run(out: Path, nproc: int, args: tuple[str, ...] = ()) -> None:
    run_module(MODULE, ["--out", str(out), *args], nproc, 300)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ref = tmp_path_factory.mktemp("torch-pipelining") / "reference"
    run(ref, 1)
    return ref


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pipelined_run_is_clean(name: str, reference: Path, tmp_path: Path) -> None:
    cand = tmp_path / name
    run(cand, 2, CONFIGS[name])
    rc, report, text = diff(reference, cand, tmp_path)
    print(summary_text(name, rc, report))
    s = report["summary"]
    assert (rc, s["invalid"], s["missing"], s["divergent"]) == (0, 0, 0, 0), text
    ids = [t["id"] for t in report["tensors"]]
    # Two micro-batches of two steps: the shape inference added none.
    assert {i["micro_batch"] for i in ids if i["kind"] == "forward_output"} == {0, 1}
    assert {i["iteration"] for i in ids} == {0, 1}
    handoff = {i["kind"] for i in ids if i["module"] == "layers.1@handoff"}
    assert handoff == {"forward_input", "forward_output", "output_grad", "input_grad"}, text
    assert {"layers.0", "layers.3", "tok_embeddings", "output"} <= {i["module"] for i in ids}


def test_stage_skipping_gradient_scaling_is_named(reference: Path, tmp_path: Path) -> None:
    cand = tmp_path / "unscaled"
    run(cand, 2, ("--bug", "unscaled"))
    rc, report, text = diff(reference, cand, tmp_path)
    print(summary_text("gpipe unscaled", rc, report))
    s = report["summary"]
    assert rc == 1 and s["invalid"] == 0 and s["missing"] == 0, text
    first = report["first_divergence"]
    assert (first["iteration"], first["phase"], first["kind"]) == (
        0,
        "gradient_reduction",
        "main_grad",
    )
    assert first["module"] == "layers.2.norm" and first["ranks"] == [1], first
    wrong = {t["id"]["module"] for t in report["tensors"] if t["status"] == "divergent"}
    at_first = {
        t["id"]["module"]
        for t in report["tensors"]
        if t["status"] == "divergent" and t["id"]["iteration"] == 0
    }
    assert wrong and all(m.startswith(STAGE_1) for m in at_first), at_first
    assert "micro_batches" in text, text


def test_training_script_needs_no_annotations() -> None:
    text = SCRIPT.read_text()
    assert "annotate" not in text and "ParallelInfo" not in text
    marked = [line for line in text.splitlines() if line.rstrip().endswith("# ttrace")]
    assert 0 < len(marked) <= 10, marked
