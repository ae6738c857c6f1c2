"""Parameters after a clipped Adam step, through the real `ttrace diff`: module `a`'s main
gradient is halved in the candidate's gradient reduction (the bug), which lowers the global
norm, so the candidate's clip coefficient is larger than the reference's and every other
gradient of the step moves by the ratio. Adam's update is scale-free except through eps:
module `b`'s tiny gradient elements (a few hundred eps) move its parameter far beyond
round-off. `b`'s own gradients agree; its parameter moved only because the global coefficient
differs: it is judged after the coefficient (clean, "moved by the clip coefficient"), never
"introduced"; `a` is introduced (in the gradient reduction). A learning-rate bug of `b` on top
stays divergent and introduced. A norm that misses `a`'s gradients (every gradient right) is
the clipping's divergence: nothing excused, no module introduced.

Bundles are written with numpy (the steps computed here in float64, stored as float32), with
two perturbed reference variants for empirical tolerances."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cli_paths import ttrace_binary

from ttrace.bundle import BundleWriter, TensorKey, write_manifest

N, LR, EPS, TINY = 64, 1e-2, 1e-8, 6
MODULES = ("a", "b")
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


def coefficient(norm: float, max_norm: float) -> float:
    return min(max_norm / (norm + 1e-6), 1.0)


def first_step(p: np.ndarray, g: np.ndarray, lr: float) -> np.ndarray:
    """AdamW's first step from zero moments: m_hat = g, v_hat = g^2."""
    return p - lr * g / (np.abs(g) + EPS)


def step(
    params: dict[str, np.ndarray],
    grads: dict[str, np.ndarray],
    max_norm: float,
    halve_a: bool = False,
    lr_b: float = LR,
    norm_of: tuple[str, ...] = MODULES,
) -> tuple[dict[str, dict[str, np.ndarray]], dict]:
    """Per module: param_grad (before the reduction), main_grad (after it and the clip),
    param_after_step, exp_avg, exp_avg_sq; and the step's clip record, its norm over the
    gradients of `norm_of`."""
    reduced = {m: g * (0.5 if halve_a and m == "a" else 1.0) for m, g in grads.items()}
    squares = [np.sum(reduced[m].astype(np.float32).astype(np.float64) ** 2) for m in norm_of]
    norm = float(np.sqrt(sum(squares)))
    c = coefficient(norm, max_norm)
    out = {}
    for m, g in reduced.items():
        clipped = g * c
        out[m] = {
            "param_grad": grads[m],
            "main_grad": clipped,
            "param_after_step": first_step(params[m], clipped, lr_b if m == "b" else LR),
            "exp_avg": 0.1 * clipped,
            "exp_avg_sq": 0.001 * clipped**2,
        }
    record = {"total_norm": norm, "max_norm": max_norm, "coefficient": c, "source": "test"}
    return out, record


def bundle(out: Path, role: str, variants: dict[str, tuple[dict, dict]]) -> Path:
    with BundleWriter(out, 0, 1, role) as w:
        for variant, (tensors, _) in variants.items():
            for module, kinds in tensors.items():
                for kind, value in kinds.items():
                    key = (
                        TensorKey(variant, 0, -1, module, "optimizer_state", f"{kind}.weight")
                        if kind.startswith("exp_avg")
                        else TensorKey(
                            variant, 0, 0 if kind == "param_grad" else -1, module, kind, "weight"
                        )
                    )
                    w.write(key, value.astype(np.float32))
        record = w.close()
    clipping = {
        "steps": [{"variant": v, "iteration": 0, **rec} for v, (_, rec) in variants.items()]
    }
    modules = [{"name": m, "order": i, "depth": 0, "type": "Linear"} for i, m in enumerate(MODULES)]
    write_manifest(
        out, role=role, world_size=1, parallel={}, precision="fp32", variants=list(variants),
        modules=modules, iterations=[0], micro_batches=1, ranks=[record], optimizer=SECTION,
        gradient_clipping=clipping,
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    rng = np.random.default_rng(5)
    params = {m: 0.1 * rng.standard_normal(N) for m in MODULES}
    # Magnitudes 1e-2 to 2e-2: no element near zero, where the variants' round-off alone
    # would move the update.
    grads = {m: 1e-2 * (1 + rng.random(N)) * np.sign(rng.standard_normal(N)) for m in MODULES}
    # A few hundred eps: above where the step's own conditioning widens the tolerance (100
    # eps), still close enough for the update g / (|g| + eps) to move with the coefficient.
    grads["b"][:TINY] = 3e-6 * np.sign(rng.standard_normal(TINY))
    max_norm = 0.05  # well below the norm (about 0.17): it clips
    unit = 1e-7 * 1e-2  # round-off of the gradients
    work = tmp_path_factory.mktemp("clip-step")
    variants = {"nominal": step(params, grads, max_norm)}
    for k in (1, 2):
        noisy = {m: g + unit * rng.standard_normal(N) for m, g in grads.items()}
        variants[f"perturbed-{k}"] = step(params, noisy, max_norm)
    ref = bundle(work / "ref", "reference", variants)
    bug = bundle(work / "bug", "candidate", {"nominal": step(params, grads, max_norm, True)})
    lr = step(params, grads, max_norm, halve_a=True, lr_b=1.01 * LR)
    lr_bug = bundle(work / "lr", "candidate", {"nominal": lr})
    # Clipping's norm misses module a's gradients (every gradient itself right).
    wrong = bundle(
        work / "wrong", "candidate", {"nominal": step(params, grads, max_norm, norm_of=("b",))}
    )
    return {"ref": ref, "bug": bug, "lr": lr_bug, "wrong": wrong}


def diff(ref: Path, cand: Path) -> tuple[int, dict, str]:
    report = cand.parent / f"{cand.name}.json"
    cmd = [str(ttrace_binary()), "diff", "--no-cache", "--json", str(report), str(ref), str(cand)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(report.read_text()), proc.stdout


def tensor(report: dict, module: str, kind: str) -> dict:
    (t,) = [t for t in report["tensors"] if t["id"]["module"] == module and t["id"]["kind"] == kind]
    return t


def origins(report: dict) -> dict[str, str]:
    return {m["name"]: m["origin"] for m in report["modules"]}


def test_innocent_parameters_are_judged_after_the_coefficient(runs: dict[str, Path]) -> None:
    rc, report, text = diff(runs["ref"], runs["bug"])
    assert rc == 1, text
    (clip,) = report["clipping"]
    assert clip["consistent"] and clip["factor"] > 1.2, clip
    assert tensor(report, "a", "main_grad")["status"] == "divergent", text
    after = tensor(report, "b", "param_after_step")
    assert after["status"] == "clean", after
    assert any(f["code"] == "clip-coefficient" for f in after["findings"]), after
    # Without the coefficient, b's tiny elements moved far beyond round-off (ratio about 30).
    assert after["conditioned_error"] > 10 * after["tolerance"], after
    assert origins(report) == {"a": "introduced", "b": "none"}, text
    assert "clipping" in text and "x1." in text, text


def test_a_learning_rate_bug_is_not_excused(runs: dict[str, Path]) -> None:
    rc, report, text = diff(runs["ref"], runs["lr"])
    assert rc == 1, text
    after = tensor(report, "b", "param_after_step")
    assert after["status"] == "divergent" and after["ratio"] > 3, after
    assert origins(report)["b"] == "introduced", text


def test_a_wrong_global_norm_is_the_clippings_not_the_modules(runs: dict[str, Path]) -> None:
    rc, report, text = diff(runs["ref"], runs["wrong"])
    assert rc == 1, text
    (clip,) = report["clipping"]
    assert not clip["consistent"] and clip["moved"] > 0, clip
    # Every gradient is right; what the step wrote diverges, by the coefficient alone.
    for m in MODULES:
        assert tensor(report, m, "param_grad")["status"] == "clean", text
        grad = tensor(report, m, "main_grad")
        assert grad["status"] == "divergent", grad
        assert any(f["code"] == "clip-coefficient" for f in grad["findings"]), grad
    assert "introduced" not in origins(report).values(), text
    assert "wrong global norm" in text and "introduced in" not in text, text
