"""Zero-annotation capture of a torchtitan-style Llama 3 (`frameworks/titan_*.py`): a complex
rotary table passed positionally, `parallelize_module` tensor + sequence parallelism (loss
parallel on and off), FSDP2 `fully_shard` per block and at the root, and both on a 2-d
`(dp_shard, tp)` mesh, each against a single-process reference on gloo, compared by the real
`ttrace diff` CLI.

Each layout must be clean (exit 0, nothing invalid, missing or divergent) and must find its
injected bug with the guilty module as the first divergence, introduced there: a scaled
row-parallel partial in `layers.0.feed_forward.w2` (tensor parallelism, a forward bug) or a
scaled gradient in block 0's reduce-scatter (FSDP2, a gradient reduction bug).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from job_runner import diff, run_module

SCRIPT = Path(__file__).resolve().parent / "frameworks" / "titan_llama.py"
MAX_TTRACE_LINES = 10


@dataclass(frozen=True)
class Layout:
    nproc: int
    args: tuple[str, ...]
    bug: str  # the bug injected in this layout's bug run
    guilty: str  # its module (a prefix for FSDP2's per-block groups)
    phase: str  # "forward" or "backward": where its first divergence shows


LAYOUTS = {
    "tp2": Layout(2, ("--tp", "2"), "tp", "layers.0.feed_forward.w2", "forward"),
    "fsdp2_dp2": Layout(2, ("--tp", "1"), "fsdp", "layers.0.", "backward"),
    "tp2_fsdp2_dp2_loss_parallel": Layout(
        4, ("--tp", "2", "--loss-parallel"), "tp", "layers.0.feed_forward.w2", "forward"
    ),
}


def run(out: Path, nproc: int, args: tuple[str, ...] = (), bug: str = "none") -> None:
    argv = ["--out", str(out), "--bug", bug, *args]
    run_module("tests.frameworks.titan_llama", argv, nproc, 300)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("titan") / "reference"
    run(out, 1)
    return out


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_clean_with_zero_annotations(name: str, reference: Path, tmp_path: Path) -> None:
    layout = LAYOUTS[name]
    cand = tmp_path / name
    run(cand, layout.nproc, layout.args)
    rc, report, text = diff(reference, cand, tmp_path)
    summary = report["summary"]
    assert (rc, summary["invalid"], summary["missing"], summary["divergent"]) == (0, 0, 0, 0), text
    assert summary["clean"] and summary["compared"] > 400, text
    kinds = {t["id"]["kind"] for t in report["tensors"] if t["status"] == "clean"}
    assert {"optimizer_state", "param_grad", "main_grad", "input_grad"} <= kinds
    # The complex rotary table, handed positionally to blocks and attention, is compared.
    tables = [
        t
        for t in report["tensors"]
        if t["id"]["kind"] == "forward_input"
        and t["id"]["index"] == "1"
        and t["id"]["module"] in ("layers.0", "layers.1.attention")
    ]
    assert tables and all(t["status"] == "clean" for t in tables), tables


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_injected_bug_found_in_its_module(name: str, reference: Path, tmp_path: Path) -> None:
    layout = LAYOUTS[name]
    cand = tmp_path / f"{name}-bug"
    run(cand, layout.nproc, layout.args, layout.bug)
    rc, report, text = diff(reference, cand, tmp_path)
    summary = report["summary"]
    assert rc == 1 and summary["divergent"] > 0, text
    assert summary["invalid"] == 0 and summary["missing"] == 0, text
    first = report["first_divergence"][layout.phase]
    assert first is not None and first.startswith(layout.guilty), text
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    assert any(m.startswith(layout.guilty) for m in introduced), text


def test_training_script_needs_few_lines_and_no_annotations() -> None:
    text = SCRIPT.read_text()
    marked = [line for line in text.splitlines() if line.rstrip().endswith("# ttrace")]
    assert 0 < len(marked) <= MAX_TTRACE_LINES, marked
    assert "annotate" not in text and "ParallelInfo" not in text
    unmarked = [line for line in text.splitlines() if "ttc." in line and line not in marked]
    assert unmarked == []
