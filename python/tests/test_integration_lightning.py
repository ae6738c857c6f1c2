"""Lightning's `trainer.fit()` captured with one callback (pytorch-lightning 2.6.6): the
reference's variants by `ttrace capture` (one `fit()` per variant, `strategy="ddp"` on one
device), the DDP candidate under torchrun (2 gloo ranks), compared by the real `ttrace diff`.

Lightning gives each DDP rank a shuffled `DistributedSampler`'s every other row: the callback
reads the sampler and places the batch as strided, so the correct run with two accumulated
micro-batches per step is clean with nothing invalid or missing. A DDP communication hook
that scales rank 1's partial gradient of one parameter is caught in the gradient reduction at
that parameter. A one-device reference that reads its rows in order is refused at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from job_runner import PYTHON_DIR, diff
from launch_runner import capture

SCRIPT = PYTHON_DIR / "tests" / "frameworks" / "lightning_fit.py"
MODULE = "tests.frameworks.lightning_fit"
GUILTY = "model.model.layers.0.mlp.down_proj"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lightning") / "ref"
    capture(MODULE, ["--reference", "--perturbations", "2"], out, 1, [])
    return out


def test_the_script_needs_two_lines() -> None:
    marked = [line for line in SCRIPT.read_text().splitlines() if line.endswith("# ttrace")]
    assert len(marked) == 2, marked  # the import and the callback


def test_correct_ddp_with_accumulation_is_clean(reference: Path, tmp_path: Path) -> None:
    cand = tmp_path / "cand"
    capture(MODULE, ["--candidate"], cand, 2, [])
    code, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    assert code == 0, text
    assert s["compared"] > 700 and (s["divergent"], s["invalid"], s["missing"]) == (0, 0, 0)
    assert s["perturbed_variants"] == 2
    clean = [t["id"] for t in report["tensors"] if t["status"] == "clean"]
    assert {(i["iteration"], i["micro_batch"]) for i in clean} >= {(0, 0), (0, 1), (1, 1)}


def test_lightnings_own_launcher_gives_a_clean_candidate(reference: Path, tmp_path: Path) -> None:
    """`python train.py` with `devices=2`: Lightning starts the second process itself."""
    cand = tmp_path / "cand"
    capture(MODULE, ["--candidate"], cand, 1, ["--devices", "2"])
    code, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    assert code == 0, text
    assert s["compared"] > 700 and (s["divergent"], s["invalid"], s["missing"]) == (0, 0, 0)


def test_a_scaled_partial_gradient_is_caught_at_its_parameter(
    reference: Path, tmp_path: Path
) -> None:
    cand = tmp_path / "cand"
    capture(MODULE, ["--candidate"], cand, 2, ["--bug", "scale"])
    code, report, text = diff(reference, cand, tmp_path)
    first = report["first_divergence"]
    assert code == 1, text
    assert (first["iteration"], first["phase"]) == (0, "gradient_reduction"), first
    assert first["module"] == GUILTY, first


def test_a_reference_reading_rows_in_order_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", MODULE, "--out", str(tmp_path / "ref"), "--strategy", "auto"],
        cwd=PYTHON_DIR,
        env=dict(os.environ, PYTHONPATH=str(PYTHON_DIR), PYTHONWARNINGS="ignore"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "SamplerError" in proc.stderr and "strategy='ddp', devices=1" in proc.stderr


def test_a_failed_fit_leaves_the_steps_it_finished(tmp_path: Path) -> None:
    out = tmp_path / "failed"
    proc = subprocess.run(
        [sys.executable, "-m", MODULE, "--out", str(out), "--fail-at", "1"],
        cwd=PYTHON_DIR,
        env=dict(os.environ, PYTHONPATH=str(PYTHON_DIR), PYTHONWARNINGS="ignore"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0 and "training step 1 failed" in proc.stderr
    # The rank file closed with a record saying so, and no manifest: an unfinished capture.
    status = json.loads((out / "rank-00000.status.json").read_text())
    assert (status["state"], status["steps_done"]) == ("exited", [["nominal", 0]]), status
    assert (out / "rank-00000.h5").is_file() and not (out / "manifest.json").exists()


UNIFIED = "tests.frameworks.lightning_unified_fit"


def test_the_unified_package_is_the_release() -> None:
    from importlib.metadata import version

    assert version("lightning") == version("pytorch-lightning") == "2.6.6"


def test_the_unified_packages_trainer_is_captured_clean(reference: Path, tmp_path: Path) -> None:
    """The same training written with `import lightning.pytorch as L` (its own Trainer,
    LightningModule and Callback classes; the callback passed alone, which that Trainer takes
    only as one of its own Callbacks): the DDP candidate against the `pytorch_lightning`
    reference, which trains the same model on the same rows."""
    script = PYTHON_DIR / "tests" / "frameworks" / "lightning_unified_fit.py"
    marked = [line for line in script.read_text().splitlines() if line.endswith("# ttrace")]
    assert len(marked) == 2, marked
    cand = tmp_path / "cand"
    capture(UNIFIED, ["--candidate"], cand, 2, [])
    code, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    assert code == 0, text
    assert s["compared"] > 700 and (s["divergent"], s["invalid"], s["missing"]) == (0, 0, 0)
    clean = [t["id"] for t in report["tensors"] if t["status"] == "clean"]
    assert {(i["iteration"], i["micro_batch"]) for i in clean} >= {(0, 0), (0, 1), (1, 1)}
