"""The optimizer-step conditioning end to end, through the real `ttrace diff`: AdamW's first
step on one gradient element at eps, where a round-off change of the gradient moves the
parameter by a few percent of lr. The perturbed variants happen not to reach that case; the
candidate does. Without the conditioning it is a false alarm; with it the element's
tolerance is widened, the tensor is clean and the report names the element. A 1%
learning-rate bug stays detected."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cli_paths import ttrace_binary

from ttrace.bundle import BundleWriter, TensorKey, write_manifest

N, NEAR_EPS, LR, EPS = 64, 7, 1e-2, 1e-8
SECTION = {
    "type": "adamw",
    "groups": [
        {
            "betas": [0.9, 0.999],
            "eps": EPS,
            "weight_decay": 0.0,
            "steps": [{"iteration": 0, "lr": LR, "step": 1}],
        }
    ],
}


def first_step(p: np.ndarray, g: np.ndarray, lr: float = LR) -> np.ndarray:
    """AdamW's first step from zero moments: m_hat = g, v_hat = g^2."""
    return p - lr * g / (np.abs(g) + EPS)


def bundle(out: Path, role: str, tensors: dict[str, tuple[np.ndarray, np.ndarray]]) -> Path:
    """`tensors`: variant -> (main_grad, param_after_step) of module fc's weight."""
    with BundleWriter(out, 0, 1, role) as w:
        for variant, (grad, after) in tensors.items():
            for kind, value in (("main_grad", grad), ("param_after_step", after)):
                w.write(TensorKey(variant, 0, -1, "fc", kind, "weight"), value.astype(np.float32))
            # The next step reads the parameter this step left (the state carries the term).
            w.write(
                TensorKey(variant, 1, -1, "fc", "parameter", "weight"), after.astype(np.float32)
            )
        record = w.close()
    write_manifest(
        out, role=role, world_size=1, parallel={}, precision="fp32", variants=list(tensors),
        modules=[{"name": "fc", "order": 0, "depth": 0, "type": "Linear"}], iterations=[0, 1],
        micro_batches=1, ranks=[record], optimizer=SECTION,
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    rng = np.random.default_rng(3)
    p = (0.1 * rng.standard_normal(N)).astype(np.float32).astype(np.float64)
    g = 1e-2 * rng.standard_normal(N)
    g[NEAR_EPS] = 2e-8  # sqrt(v_hat) = |g| is at eps
    # Round-off of the gradient: ~1e-7 of its rms per element. The variants barely move the
    # near-eps element; the candidate moves it by 3 units (still round-off).
    unit = 1e-7 * np.sqrt(np.mean(g**2))
    noise = [unit * rng.standard_normal(N) for _ in range(3)]
    noise[0][NEAR_EPS], noise[1][NEAR_EPS], noise[2][NEAR_EPS] = 0.1 * unit, -0.1 * unit, 3 * unit
    work = tmp_path_factory.mktemp("adam")
    variants = {"nominal": g, "perturbed-1": g + noise[0], "perturbed-2": g + noise[1]}
    ref = bundle(work / "ref", "reference", {v: (x, first_step(p, x)) for v, x in variants.items()})
    gc = g + noise[2]
    clean = bundle(work / "clean", "candidate", {"nominal": (gc, first_step(p, gc))})
    lr_bug = bundle(work / "lr", "candidate", {"nominal": (gc, first_step(p, gc, 1.01 * LR))})
    return {"ref": ref, "clean": clean, "lr": lr_bug}


def diff(ref: Path, cand: Path, conditioning: bool) -> tuple[int, dict]:
    """(exit code, the param_after_step result); the next step's parameter, the same values,
    must get the same verdict (terms carry with the state like floors do)."""
    env = dict(os.environ)
    env.pop("TTRACE_NO_OPTIMIZER_CONDITIONING", None)
    if not conditioning:
        env["TTRACE_NO_OPTIMIZER_CONDITIONING"] = "1"
    report = cand.parent / f"{cand.name}-{int(conditioning)}.json"
    cmd = [str(ttrace_binary()), "diff", "--no-cache", "--json", str(report), str(ref), str(cand)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    rep = json.loads(report.read_text())
    (after,) = [t for t in rep["tensors"] if t["id"]["kind"] == "param_after_step"]
    (parameter,) = [t for t in rep["tensors"] if t["id"]["kind"] == "parameter"]
    assert parameter["status"] == after["status"], (parameter, after)
    return proc.returncode, after


def test_near_eps_element_is_a_false_alarm_without_the_term(runs: dict[str, Path]) -> None:
    rc, after = diff(runs["ref"], runs["clean"], conditioning=False)
    assert rc == 1 and after["status"] == "divergent", after
    assert after["top_elements"][0]["index"] == NEAR_EPS
    assert after["ill_conditioned_elements"] == 0


def test_near_eps_element_is_widened_and_named(runs: dict[str, Path]) -> None:
    rc, after = diff(runs["ref"], runs["clean"], conditioning=True)
    assert rc == 0 and after["status"] == "clean", after
    assert after["ill_conditioned_elements"] == 1
    top = after["top_elements"][0]
    assert top["index"] == NEAR_EPS and top["conditioning"] > top["error"] > 0
    assert after["tolerance_detail"]["conditioning"] > 0
    # Only the ratio changes: the error and the tensor's tolerance are reported as before.
    assert after["conditioned_error"] < after["error"]


def test_learning_rate_bug_stays_detected(runs: dict[str, Path]) -> None:
    for conditioning in (False, True):
        rc, after = diff(runs["ref"], runs["lr"], conditioning)
        assert rc == 1 and after["status"] == "divergent" and after["ratio"] > 3, after
