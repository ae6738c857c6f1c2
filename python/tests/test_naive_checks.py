"""The detection-power baselines (python/ttrace_testing/naive_checks.py) judge real bundles the way
their definitions say: assert_close elementwise with torch's defaults, cosine < 0.99 and the fixed
upstream bound on the relative error. Errors are planted at known sizes on either side of each
threshold, so a baseline that is mis-wired (wrong eps, wrong variant, integers compared) fails."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from ttrace.bundle import BundleWriter, TensorKey, write_manifest
from ttrace_testing.naive_checks import fixed_bound, naive_flags

REPO = Path(__file__).resolve().parents[2]


SHAPE = (64, 32)


def _bundle(path: Path, role: str, tensors: dict[str, np.ndarray | torch.Tensor]) -> Path:
    with BundleWriter(path, 0, 1, role) as w:
        for module, value in tensors.items():
            w.write(TensorKey("nominal", 0, 0, module, "forward_output", "0"), value)
    modules = [{"name": m, "order": i, "depth": 1, "type": "Linear"} for i, m in enumerate(tensors)]
    write_manifest(
        path,
        role=role,
        world_size=1,
        parallel={},
        precision="fp32",
        variants=["nominal"],
        modules=modules,
        iterations=[0],
        micro_batches=1,
        ranks=[w.record],
    )
    return path


@pytest.fixture(scope="module")
def flagged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    root = tmp_path_factory.mktemp("naive")
    rng = np.random.default_rng(7)
    ref = (rng.standard_normal(SHAPE) + 2.0).astype(np.float32)  # no element near zero
    noise = rng.standard_normal(SHAPE)
    noise /= np.linalg.norm(noise)

    def rel(size: float) -> np.ndarray:  # ref plus noise of relative Frobenius size `size`
        return (ref + size * np.linalg.norm(ref) * noise).astype(np.float32)

    bound = fixed_bound("fp32")
    cand = {
        "same": ref.copy(),
        # A scale of 1 + x is a relative error of x, elementwise too: at 2x the bound that is
        # 2.5e-6 * |ref|, still inside assert_close's 1e-5 + 1.3e-6 * |ref| while |ref| < 8.
        "below_bound": ref * np.float32(1 + 0.5 * bound),
        "above_bound": ref * np.float32(1 + 2.0 * bound),
        "elementwise": ref * np.float32(1 + 1e-4),  # rtol 1.3e-6 and atol 1e-5 both exceeded
        "orthogonal": rel(0.2),  # cosine ~0.98
        "tokens": np.arange(8, dtype=np.int64),
    }
    refs = {k: ref for k in cand} | {"tokens": np.arange(8, dtype=np.int64) + 1}
    r = _bundle(root / "ref", "reference", refs)
    c = _bundle(root / "cand", "candidate", cand)
    return {m: [label.split()[4] for label in f] for m, f in naive_flags(r, c, "fp32").items()}


def test_fixed_bound_is_the_upstream_constant() -> None:
    assert fixed_bound("fp32") == pytest.approx(4 * 1.03**33 * 2.0**-23)
    assert fixed_bound("fp8") == fixed_bound("bf16") == pytest.approx(4 * 1.03**33 * 2.0**-7)


def test_fixed_bound_flags_only_errors_above_it(flagged: dict[str, list[str]]) -> None:
    assert sorted(flagged["fixed bound"]) == ["above_bound", "elementwise", "orthogonal"]


def test_assert_close_is_elementwise_with_default_tolerances(flagged: dict) -> None:
    assert sorted(flagged["assert_close"]) == ["elementwise", "orthogonal"]


def test_cosine_flags_only_below_0_99(flagged: dict[str, list[str]]) -> None:
    assert flagged["cosine"] == ["orthogonal"]


def test_integer_tensors_are_left_to_exact_comparison(flagged: dict) -> None:
    assert all("tokens" not in f for f in flagged.values())
