"""Floors whose perturbed variants disagree, end to end through the real `ttrace diff` on real
HDF5 bundles: a tensor that amplifies round-off chaotically (one variant moved it by 3e-3, the
other by 7e-6, 430x apart) next to a well-conditioned one. A correct candidate just over the
chaotic tensor's tolerance is judged provisionally (exit 3, the count and the advice to capture
more variants in the summary, the JSON and the Markdown), never a confident divergence; the same
ratio on the well-conditioned tensor is one; an error beyond the variants' disagreement on the
chaotic tensor is a confident divergence too."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cli_paths import ttrace_binary

from ttrace.bundle import BundleWriter, TensorKey, write_manifest

N = 256
MODULES = [
    {"name": "attn", "order": 0, "depth": 0, "type": "Attention"},
    {"name": "fc", "order": 1, "depth": 0, "type": "Linear"},
]


def moved(x: np.ndarray, rel: float, seed: int) -> np.ndarray:
    """`x` plus a random direction scaled to relative Frobenius error `rel`."""
    d = np.random.default_rng(seed).standard_normal(x.shape)
    return x + d * (rel * np.linalg.norm(x) / np.linalg.norm(d))


def bundle(out: Path, role: str, variants: dict[str, dict[str, np.ndarray]]) -> Path:
    """`variants`: variant -> module -> its forward_output[0] (iteration 0, micro-batch 0)."""
    with BundleWriter(out, 0, 1, role) as w:
        for variant, outputs in variants.items():
            for module, value in outputs.items():
                key = TensorKey(variant, 0, 0, module, "forward_output", "0")
                w.write(key, value.astype(np.float32))
        record = w.close()
    write_manifest(
        out, role=role, world_size=1, parallel={}, precision="fp32", variants=list(variants),
        modules=MODULES, iterations=[0], micro_batches=1, ranks=[record],
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    rng = np.random.default_rng(5)
    attn, fc = rng.standard_normal(N), rng.standard_normal(N)
    work = tmp_path_factory.mktemp("unstable")
    ref = bundle(
        work / "ref",
        "reference",
        {
            "nominal": {"attn": attn, "fc": fc},
            # attn: the two variants disagree by ~430x; fc: by ~1.2x.
            "perturbed-1": {"attn": moved(attn, 3e-3, 1), "fc": moved(fc, 1.0e-6, 2)},
            "perturbed-2": {"attn": moved(attn, 7e-6, 3), "fc": moved(fc, 1.2e-6, 4)},
        },
    )
    # attn's tolerance is 4 * (mean + 2 * spread) of (3e-3, 7e-6), about 2.3e-2; fc's about
    # 5.0e-6. Each candidate moves one tensor; the other stays within round-off.
    cases = {
        "attn_near": (5e-2, 3e-7),  # ratio ~2.2 on the chaotic tensor: provisional
        "fc_near": (1e-3, 1e-5),  # ratio ~2 on the well-conditioned one: divergent
        "attn_far": (20.0, 3e-7),  # ratio ~870 > 430x: divergent with confidence
    }
    out = {"ref": ref}
    for name, (e_attn, e_fc) in cases.items():
        outputs = {"attn": moved(attn, e_attn, 11), "fc": moved(fc, e_fc, 12)}
        out[name] = bundle(work / name, "candidate", {"nominal": outputs})
    return out


def diff(ref: Path, cand: Path) -> tuple[int, str, dict, str]:
    """(exit code, the CLI's summary, the JSON report, the Markdown report)."""
    report, md = cand.with_suffix(".json"), cand.with_suffix(".md")
    args = ["diff", "--no-cache", "--json", str(report), "--markdown", str(md)]
    proc = subprocess.run(
        [str(ttrace_binary()), *args, str(ref), str(cand)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.is_file(), proc.stdout + proc.stderr
    return proc.returncode, proc.stdout, json.loads(report.read_text()), md.read_text()


def tensor(doc: dict, module: str) -> dict:
    return next(t for t in doc["tensors"] if t["id"]["module"] == module)


def test_correct_run_over_a_chaotic_floor_is_provisional(runs: dict[str, Path]) -> None:
    code, text, doc, md = diff(runs["ref"], runs["attn_near"])
    s, attn, fc = doc["summary"], tensor(doc, "attn"), tensor(doc, "fc")
    assert attn["unstable_floor"] and not fc["unstable_floor"]
    detail = attn["tolerance_detail"]
    assert 300 < detail["floor_disagreement"] < 600, detail
    assert 1 < attn["ratio"] < detail["floor_disagreement"]
    assert attn["status"] == "clean" and fc["status"] == "clean"
    assert any(f["code"] == "unstable-floor" for f in attn["findings"])
    assert (code, s["verdict"], s["divergent"]) == (3, "unresolved", 0), text
    assert (s["unstable_floors"], s["unstable_over_bound"]) == (1, 1)
    assert s["unstable_max_ratio"] == attn["ratio"] and s["max_ratio"] < 1
    advice = "floor rests on variants that disagree by more than 100x: capture more variants"
    assert advice in text and advice in md
    assert "UNRESOLVED" in text
    # No module is blamed offline for a ratio the floor's disagreement can explain.
    assert all(m["origin"] == "none" for m in doc["modules"]), doc["modules"]


def test_the_same_ratio_on_a_stable_floor_is_divergent(runs: dict[str, Path]) -> None:
    code, text, doc, _ = diff(runs["ref"], runs["fc_near"])
    fc = tensor(doc, "fc")
    assert 1.5 < fc["ratio"] < 3 and fc["status"] == "divergent", fc
    assert (code, doc["summary"]["divergent"]) == (1, 1), text


def test_beyond_the_disagreement_the_chaotic_tensor_diverges(runs: dict[str, Path]) -> None:
    code, text, doc, _ = diff(runs["ref"], runs["attn_far"])
    attn = tensor(doc, "attn")
    assert attn["ratio"] > attn["tolerance_detail"]["floor_disagreement"]
    assert attn["status"] == "divergent" and code == 1, text
    assert doc["summary"]["unstable_over_bound"] == 0
