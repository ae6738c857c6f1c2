"""`ttrace localize` on a model sharded by torch's FSDP2 (`fully_shard` per Hugging Face
Llama decoder layer and on the root, 2 gloo ranks), the candidate kept up after capture as
its agent, 0 annotations. Between steps FSDP2 holds every parameter as a DTensor shard:

- a forward bug inside a sharded layer (`layers.1.mlp.down_proj`'s output scaled on rank 1):
  the walk names that module; its parents inherit nothing, the modules around it, replayed
  with their unit's parameters gathered for the call, inherit;
- a gradient-reduction bug (rank 1's share of layer 0's reduce-scatter scaled): the step
  replay takes the reference's gradients into the sharded DTensor gradients and the walk
  says the divergence enters in the gradient reduction of layer 0's parameters;
- replays leave the job as it was: the same walk twice gives the same verdicts;
- `ttrace serve` relaunches the job from its bundles and gives the same verdicts (its
  replays run before any forward through FSDP2's root).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from job_runner import run_module
from serve_job import RelaunchJob
from serving_candidate import ServingCandidate, localize

MODULE = "tests.frameworks.hf_fsdp"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fsdp") / "reference"
    run_module(MODULE, ["--out", str(out)], 1, 600)
    return out


def verdicts(report: dict) -> dict[tuple[str, str], str]:
    return {(v["module"], v["phase"]): v["verdict"] for v in report["verdicts"]}


def test_forward_bug_inside_a_sharded_layer_is_named(
    reference: Path, tmp_path: Path, serving: list[ServingCandidate]
) -> None:
    job = ServingCandidate(tmp_path / "forward", reference, MODULE, ["--bug", "forward"], 2)
    serving.append(job)
    rc, first, text = job.localize(reference, tmp_path / "walk.json")
    assert rc == 1 and first["guilty"] == ["model.layers.1.mlp.down_proj"], text
    found = verdicts(first)
    assert found[("model.layers.1.mlp.down_proj", "forward")] == "introduced", text
    # Each replayed alone, with its unit (the layer, the root) gathered around the call.
    rc, report, text = job.localize(
        reference,
        tmp_path / "around.json",
        *("--module", "model.layers.1.mlp.gate_proj", "--module", "model.norm"),
        *("--module", "lm_head", "--phase", "backward"),
    )
    found = verdicts(report)
    for module in ("model.layers.1.mlp.gate_proj", "model.norm", "lm_head"):
        assert found[(module, "backward")] == "inherited", text
    assert rc == 0, text
    # The replays put the job's own values back: the walk again says the same.
    rc, again, text = job.localize(reference, tmp_path / "again.json", "--shutdown")
    assert rc == 1 and again["guilty"] == ["model.layers.1.mlp.down_proj"], text
    assert verdicts(again) == verdicts(first), text
    assert job.proc.wait(timeout=120) == 0, job.output()
    # Relaunched from the bundles (`ttrace serve`), before any forward of FSDP2's root.
    relaunch = RelaunchJob(tmp_path / "serve", reference, job.bundle, cwd=tmp_path)
    try:
        endpoint, _, _ = relaunch.wait_serving()
        rc, report, text = localize(
            reference, job.bundle, endpoint, relaunch.token_file, tmp_path / "relaunch.json",
            "--shutdown",
        )  # fmt: skip
        assert rc == 1 and verdicts(report) == verdicts(first), text
        assert relaunch.proc.wait(timeout=120) == 0, relaunch.output()
    finally:
        relaunch.kill()


def test_reduction_bug_enters_in_the_gradient_reduction(
    reference: Path, tmp_path: Path, serving: list[ServingCandidate]
) -> None:
    job = ServingCandidate(tmp_path / "reduction", reference, MODULE, ["--bug", "scale"], 2)
    serving.append(job)
    rc, report, text = job.localize(reference, tmp_path / "walk.json", "--shutdown")
    assert rc == 1 and report["guilty_phase"] == "gradient reduction", text
    guilty = report["guilty_parameters"]
    assert guilty and all(p.startswith("model.layers.0.") for p in guilty), text
    assert "model.layers.0.mlp.down_proj" in guilty, text
    assert job.proc.wait(timeout=120) == 0, job.output()
