"""The demo bundles: a candidate that merges to the reference within round-off, and a bug
that does not."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from bundle_oracle import read_all

from ttrace_testing import demo_bundles


def relative_error(candidate: np.ndarray, reference: np.ndarray) -> float:
    scale = max(float(np.linalg.norm(reference)), 1e-30)
    return float(np.linalg.norm(candidate - reference)) / scale


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    assert demo_bundles.main([str(out)]) == 0
    return out


def test_manifests(clean: Path) -> None:
    reference = json.loads((clean / "reference" / "manifest.json").read_text())
    candidate = json.loads((clean / "candidate" / "manifest.json").read_text())
    assert reference["variants"] == ["nominal", "perturbed-1", "perturbed-2"]
    assert reference["perturbation"]["seeds"] == [1, 2]
    assert candidate["variants"] == ["nominal"] and candidate["world_size"] == 4
    assert candidate["parallel"]["tp"] == 2 and candidate["parallel"]["dp"] == 2
    assert [m["name"] for m in reference["modules"]] == [m["name"] for m in candidate["modules"]]
    assert [r["coords"]["tp"] for r in candidate["ranks"]] == [0, 1, 0, 1]


def test_candidate_merges_to_reference_within_round_off(clean: Path) -> None:
    reference = read_all(clean / "reference")
    candidate = read_all(clean / "candidate")
    nominal = {p: v for p, v in reference.items() if p.startswith("/nominal/")}
    assert set(candidate) == set(nominal)
    combines: set[str] = set()
    for path, (values, _) in candidate.items():
        error = relative_error(values, nominal[path][0])
        assert error < 1e-5, (path, error)
        combines.add(path.split("/")[5])
    assert combines == {
        "forward_input",
        "forward_output",
        "output_grad",
        "input_grad",
        "param_grad",
        "main_grad",
        "optimizer_state",
        "param_after_step",
        "parameter",
    }
    # The perturbed variants differ from nominal by round-off-sized amounts, not zero.
    path = "/perturbed-1/iter_1/mb_1/layers.1/forward_output/0"
    noise = relative_error(reference[path][0], nominal[path.replace("perturbed-1", "nominal")][0])
    assert 0 < noise < 1e-5


def test_injected_bug_is_visible(tmp_path: Path) -> None:
    assert demo_bundles.main([str(tmp_path), "--inject-bug"]) == 0
    reference = read_all(tmp_path / "reference")
    candidate = read_all(tmp_path / "candidate")
    buggy = "/nominal/iter_0/mb_0/layers.1.mlp.fc2/forward_output/0"
    assert relative_error(candidate[buggy][0], reference[buggy][0]) > 1e-3
    before = "/nominal/iter_0/mb_0/layers.1.mlp.fc1/forward_output/0"
    assert relative_error(candidate[before][0], reference[before][0]) < 1e-5
    manifest = json.loads((tmp_path / "candidate" / "manifest.json").read_text())
    assert "bug" in manifest["model"]
