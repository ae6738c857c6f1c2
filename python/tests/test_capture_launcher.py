"""`ttrace capture`: the reference's variants by relaunching an unchanged script, one variant
per run, joined into the bundle `tracer.run_variants()` writes; the launcher's role wins;
a run that fails or differs leaves no reference claiming variants it lacks.

Real runs of a real script (`launch_job.py`) through the real `ttrace` binary, which hands
over to `python -m ttrace capture`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
from cli_paths import ttrace_binary

JOB = Path(__file__).resolve().parent / "launch_job.py"


def capture(args: list[str], job_args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TTRACE_PYTHON=sys.executable, OMP_NUM_THREADS="1")
    cmd = [str(ttrace_binary()), "capture", *args, "--", sys.executable, str(JOB), *job_args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def run_job(job_args: list[str], cwd: Path) -> None:
    # The same thread count as the launched runs: CPU reductions split by thread differ in
    # the last bit otherwise.
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, str(JOB), *job_args], cwd=cwd, env=env, check=True, timeout=300)


def datasets(path: Path) -> dict[str, tuple[np.ndarray, dict]]:
    found: dict[str, tuple[np.ndarray, dict]] = {}

    def visit(name: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset):
            attrs = {k: np.asarray(v).tolist() for k, v in obj.attrs.items()}
            found[name] = (obj[()], attrs)

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return found


def manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def validate(bundle: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ttrace_binary()), "validate", str(bundle)], capture_output=True, text=True
    )


def test_variant_runs_join_into_the_run_variants_bundle(tmp_path: Path) -> None:
    proc = capture(
        ["--reference", "--perturbations", "2", "--out", "joined"], ["x", "loop"], tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "run 3 of 3 (nominal)" in proc.stderr
    run_job(["one", "variants", "--role", "reference", "--perturbations", "2"], tmp_path)
    joined, one = tmp_path / "joined", tmp_path / "one"
    a, b = manifest(joined), manifest(one)
    assert a["variants"] == b["variants"] == ["nominal", "perturbed-1", "perturbed-2"]
    assert a["perturbation"] == b["perturbation"]
    for key in ("iterations", "micro_batches", "modules", "optimizer"):
        assert a[key] == b[key], key
    assert [r["tensors"] for r in a["ranks"]] == [r["tensors"] for r in b["ranks"]]
    left, right = datasets(joined / "rank-00000.h5"), datasets(one / "rank-00000.h5")
    assert left.keys() == right.keys() and len(left) > 300
    for name, (values, attrs) in left.items():
        assert np.array_equal(values, right[name][0]), name  # bitwise, every variant
        assert attrs == right[name][1], name
    assert validate(joined).returncode == 0
    assert not (tmp_path / "joined.variant-runs").exists()


def test_a_run_that_differs_is_refused_and_the_nominal_bundle_stays_valid(tmp_path: Path) -> None:
    proc = capture(
        ["--reference", "--perturbations", "2", "--out", "ref"],
        ["x", "loop", "--short-variant", "perturbed-2"],
        tmp_path,
    )
    assert proc.returncode == 1
    assert "perturbed-2" in proc.stderr and "iterations [0] differs" in proc.stderr
    assert manifest(tmp_path / "ref")["variants"] == ["nominal"]
    assert validate(tmp_path / "ref").returncode == 0
    assert not list((tmp_path / "ref").glob("*.tmp"))


def test_a_failed_run_stops_the_capture_and_is_named(tmp_path: Path) -> None:
    proc = capture(
        ["--reference", "--out", "ref"], ["x", "loop", "--fail-variant", "perturbed-1"], tmp_path
    )
    assert proc.returncode == 1
    assert "the perturbed-1 run exited with 3" in proc.stderr
    assert not (tmp_path / "ref" / "manifest.json").exists()


def test_the_launchers_role_wins_over_the_scripts(tmp_path: Path) -> None:
    proc = capture(
        ["--candidate", "--out", "cand"],
        ["x", "variants", "--role", "reference", "--perturbations", "2"],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    m = manifest(tmp_path / "cand")
    assert m["role"] == "candidate" and m["variants"] == ["nominal"]
    assert not (tmp_path / "x").exists()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert (
        capture(["--candidate", "--perturbations", "1", "--out", "c"], ["x"], tmp_path).returncode
        == 2
    )
    no_command = subprocess.run(
        [str(ttrace_binary()), "capture", "--reference", "--out", "r"],
        env=dict(os.environ, TTRACE_PYTHON=sys.executable),
        capture_output=True,
        text=True,
    )
    assert no_command.returncode == 2 and "after --" in no_command.stderr


def test_a_bad_variant_environment_is_named(tmp_path: Path) -> None:
    env = dict(
        os.environ,
        TTRACE_CAPTURE_ROLE="reference",
        TTRACE_CAPTURE_OUT="r",
        TTRACE_CAPTURE_VARIANT="3/2",
    )
    proc = subprocess.run(
        [sys.executable, str(JOB), "x", "loop"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "TTRACE_CAPTURE_VARIANT='3/2' is not valid" in proc.stderr
