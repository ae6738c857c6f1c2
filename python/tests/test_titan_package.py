"""torchtitan's own Llama 3 and parallelize code from its package (0.3.0, on Python 3.12 in
`.venv312`, ctest entry `python_titan`), captured with zero annotations
(`titan_pkg/llama3_train.py`): the `debugmodel` config (2 layers), `parallelize_llama` on the
`partial_dtensor` backend (its tensor + sequence parallel sharding config; its
`apply_fsdp_to_decoder`, which turns FSDP's gradient division off because the loss is summed
and divided by the global token count), torchtitan's loss, `clip_grad_norm_` (max norm 1, which
clips here: the comparison reads the recorded clip coefficients) and optimizer container,
against a single-process reference on gloo, compared by the real `ttrace diff`.

Layouts: TP2, FSDP2 (`dp_shard` 2), TP2 x FSDP2 (4 ranks). Each injected bug patches a
torchtitan function at run time (`titan_pkg/bugs.py`) and must exit 1 with its module named:
TP2, tensor-parallel rank 1's partial sum in `layers.0.feed_forward.w2`'s output reduction
scaled by 1 + 1e-3 (first forward divergence there, introduced); FSDP2, block 0's gradients
averaged instead of summed (a gradient reduction bug: block 0's main gradients diverge first,
and the other parameters, whose clipped gradients move by the clip coefficient, are read as
moved by it; so are their parameters after Adam's step, which move with the coefficient through
eps where a gradient is tiny: no innocent module is introduced).

CPU shims (`titan_pkg/cpu_shims.py`), device choices only: the mesh's device type; torchtitan's
causal SDPA inner attention instead of FlexAttention (no backward on CPU); FSDP2's own
sum-then-divide reduce-scatter instead of PREMUL_SUM (not in gloo).
Not run on CPU: the default `spmd_types` backend (torch 2.13.0's FSDP2 refuses its plain-tensor
parameters: "When dp_mesh_dims is provided, all parameters must be DTensors"), FlexAttention
and varlen attention, torch.compile, float8.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest
from job_runner import diff, run_module

RELEASE = "0.3.0"
SCRIPT = Path(__file__).resolve().parent / "titan_pkg" / "llama3_train.py"
MAX_TTRACE_LINES = 10


@dataclass(frozen=True)
class Layout:
    nproc: int
    tp: int


LAYOUTS = {"tp2": Layout(2, 2), "fsdp2_dp2": Layout(2, 1), "tp2_fsdp2_dp2": Layout(4, 2)}
BUGS = {
    # layout, bug, phase of the first divergence, the guilty module's name (or its prefix)
    "tp_row_parallel_reduction": ("tp2", "tp", "forward", "layers.0.feed_forward.w2"),
    "fsdp_block0_averaged": ("fsdp2_dp2", "fsdp", "gradient_reduction", "layers.0."),
}


def run(out: Path, nproc: int, tp: int = 1, bug: str = "none") -> None:
    args = ["--out", str(out), "--tp", str(tp), "--bug", bug]
    run_module("tests.titan_pkg.llama3_train", args, nproc, 600)


def test_the_package_is_the_release() -> None:
    assert version("torchtitan") == RELEASE


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("titan") / "reference"
    run(out, 1)
    return out


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_correct_run_is_clean(name: str, reference: Path, tmp_path: Path) -> None:
    layout = LAYOUTS[name]
    cand = tmp_path / name
    run(cand, layout.nproc, layout.tp)
    rc, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    counts = (rc, s["invalid"], s["missing"], s["unresolved"], s["divergent"])
    assert counts == (0, 0, 0, 0, 0), text
    assert s["compared"] > 400, text
    kinds = {t["id"]["kind"] for t in report["tensors"] if t["status"] == "clean"}
    assert {"forward_output", "param_grad", "main_grad", "optimizer_state"} <= kinds, kinds
    # The coefficient differs by the global norm's round-off: consistent, every step tensor it
    # moved judged after it.
    assert all(c["consistent"] for c in report["clipping"]), report["clipping"]


@pytest.mark.parametrize("name", sorted(BUGS))
def test_injected_bug_is_found_in_its_module(name: str, reference: Path, tmp_path: Path) -> None:
    layout_name, bug, phase, guilty = BUGS[name]
    layout = LAYOUTS[layout_name]
    cand = tmp_path / name
    run(cand, layout.nproc, layout.tp, bug)
    rc, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    assert (rc, s["invalid"], s["missing"], s["unresolved"]) == (1, 0, 0, 0), text
    first = report["first_divergence"]
    assert first["phase"] == phase and first["module"].startswith(guilty), text
    if bug == "fsdp":
        # Block 0's smaller gradients lower the global norm: every other parameter's clipped
        # gradient and moments move by the coefficient and are read as such.
        (step0, *_) = report["clipping"]
        assert step0["consistent"] and step0["moved"] > 0 and step0["factor"] > 1.0, text
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    # The guilty module (or its blocks), and its parents, which hold it.
    innocent = [m for m in introduced if not (m.startswith(guilty) or guilty.startswith(m + "."))]
    assert introduced and introduced[0] not in innocent, text
    if bug == "fsdp":
        # The innocent parameters after the clipped step are judged after the coefficient
        # (Adam's step re-evaluated at the coefficient ratio): none is introduced, and nothing
        # of an innocent module diverges at that step.
        assert innocent == [], text
        moved = [
            t
            for t in report["tensors"]
            if t["id"]["kind"] == "param_after_step" and t["id"]["iteration"] == 0
            if any(f["code"] == "clip-coefficient" for f in t["findings"])
        ]
        assert {"layers.1.attention.wo", "lm_head"} <= {t["id"]["module"] for t in moved}, text
        assert all(t["status"] == "clean" for t in moved), text
        # Declared, not inferred: FSDP2 shards the optimizer's state, the reference's AdamW not.
        sharding = {
            side: json.loads((path / "manifest.json").read_text())["optimizer_sharding"]["sharded"]
            for side, path in (("reference", reference), ("candidate", cand))
        }
        assert sharding == {"reference": False, "candidate": True}, sharding
    else:
        assert len(innocent) <= 1, text


def test_training_script_needs_few_lines_and_no_annotations() -> None:
    text = SCRIPT.read_text()
    marked = [line for line in text.splitlines() if line.rstrip().endswith("# ttrace")]
    assert 0 < len(marked) <= MAX_TTRACE_LINES, marked
    assert "annotate" not in text and "ParallelInfo" not in text
    unmarked = [line for line in text.splitlines() if "ttc." in line and line not in marked]
    assert unmarked == []
