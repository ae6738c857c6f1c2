"""Real Megatron-core pipelines captured with zero annotations: the tiny `GPTModel`
of `megatron/gpt_train.py` with 4 layers, split over 2 pipeline stages by Megatron's own
`parallel_state`, `pre_process`/`post_process` and layer numbers, trained with the 1F1B
schedule (batched and separate p2p exchanges), with tensor parallelism, and interleaved (2
model chunks per stage), against a single-process reference of the same 4 layers.

The file runs on the installed release: 0.16.1 (`.venv`, ctest entry
`python_megatron_pipeline`: every layout and bug) and 0.19.2 (`.venv312`,
`python_megatron_latest_pipeline`: PP2, VPP2 and the stale activation).

Correct runs must be clean (exit 0, nothing invalid, missing or divergent): each stage's
`decoder` holds other layers than the reference's and is left out with a note, never merged
as a replica. A stage that consumes a stale activation must be found at the hand-off it
arrives through (`decoder.layers.1@handoff`, introduced); a micro-batch loss not averaged at
the loss, where the backward starts (the head).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from job_runner import diff, run_module

LAYERS = ("--layers", "4")


@dataclass(frozen=True)
class Config:
    nproc: int
    args: tuple[str, ...]


CONFIGS = {
    "pp2": Config(2, ("--pp", "2")),
    "pp2_separate_p2p": Config(2, ("--pp", "2", "--no-batch-p2p")),
    "pp2_tp2": Config(4, ("--pp", "2", "--tp", "2")),
    "pp2_tp2_separate_p2p": Config(4, ("--pp", "2", "--tp", "2", "--no-batch-p2p")),
    "pp2_vpp2": Config(2, ("--pp", "2", "--vpp", "2")),
}
# bug -> (layout, the module the divergence is introduced in, the phase it starts in)
BUGS = {
    "stale_activation": ("pp2", "decoder.layers.1@handoff", "forward"),
    "loss_not_averaged": ("pp2", "output_layer", "backward"),
}


def run(out: Path, nproc: int, args: tuple[str, ...] = (), bug: str = "none") -> None:
    run_module(
        "tests.megatron.gpt_train", ["--out", str(out), *LAYERS, *args, "--bug", bug], nproc, 900
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ref = tmp_path_factory.mktemp("megatron-pipeline") / "reference"
    run(ref, 1)
    return ref


def summary_line(name: str, rc: int, report: dict) -> str:
    s = report["summary"]
    first = report["first_divergence"]
    return (
        f"\n{name}: compared {s['compared']} divergent {s['divergent']} invalid {s['invalid']} "
        f"missing {s['missing']} exit {rc} first forward {first['forward']} "
        f"backward {first['backward']}"
    )


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pipelined_run_is_clean(name: str, reference: Path, tmp_path: Path) -> None:
    config = CONFIGS[name]
    cand = tmp_path / name
    run(cand, config.nproc, config.args)
    rc, report, text = diff(reference, cand, tmp_path)
    print(summary_line(name, rc, report))
    s = report["summary"]
    assert (rc, s["invalid"], s["missing"], s["divergent"]) == (0, 0, 0, 0), text
    assert s["compared"] > 1000, text
    clean = {(t["id"]["module"], t["id"]["kind"]) for t in report["tensors"]}
    # Every layer on both stages, the embedding (first stage), the head (last stage), and the
    # hand-off between the stages on both sides, with its gradients.
    for layer in range(4):
        assert (f"decoder.layers.{layer}", "forward_output") in clean, layer
    assert ("embedding", "forward_output") in clean and ("output_layer", "output_grad") in clean
    handoff = {kind for module, kind in clean if module == "decoder.layers.1@handoff"}
    assert {"forward_input", "forward_output", "output_grad", "input_grad"} <= handoff
    # The stages' `decoder` copies are not compared, and the report says so.
    assert ("decoder", "forward_output") not in clean
    notes = [d for d in report["diagnostics"] if d.get("code") == "pipeline-stage-containers"]
    assert notes and "decoder" in notes[0]["message"], report["diagnostics"]


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_pipeline_bug_found_where_it_enters(bug: str, reference: Path, tmp_path: Path) -> None:
    name, guilty, phase = BUGS[bug]
    config = CONFIGS[name]
    cand = tmp_path / f"{name}-{bug}"
    run(cand, config.nproc, config.args, bug)
    rc, report, text = diff(reference, cand, tmp_path)
    print(summary_line(f"{name} {bug}", rc, report))
    s = report["summary"]
    assert rc == 1 and s["divergent"] > 0, text
    assert s["invalid"] == 0 and s["missing"] == 0, text
    assert report["first_divergence"][phase] == guilty, text
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    assert introduced and introduced[0] == guilty, text
