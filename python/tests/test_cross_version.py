"""The same layout across versions and kernels (docs/cross-version.md): the example GPT in TP2
(fp32) as a distributed reference, against TP2 candidates that run another attention kernel
(`--attention-kernel`), with and without a bug, and with a torch version rewritten in a copied
manifest (a simulated upgrade: this machine has one torch). The report names what differs;
a changed kernel within the drift bound is drift at the attention modules and downstream,
never hundreds of divergences; a change of precision (TF32) and a bug stay divergent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ttrace_testing.zoo_lib import TTRACE, require_cli, run_train

REPO = Path(__file__).resolve().parents[2]


BUG = "sp-norm-grad-not-reduced"  # the demo's default
TP2 = ("--tp", "2")
DRIFT_BOUND = 10.0  # kDriftBound, core/include/ttrace/compare/drift.h


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require_cli()
    root = tmp_path_factory.mktemp("crossversion")
    runs = {
        "ref": ("--reference", "--perturbations", "2"),
        "cand": (),
        "cand-bf16x3": ("--attention-kernel", "bf16x3"),
        "cand-tf32": ("--attention-kernel", "tf32"),
        "cand-bf16x3-bug": ("--attention-kernel", "bf16x3", "--inject", BUG),
    }
    out: dict[str, Path] = {}
    for name, extra in runs.items():
        out[name] = root / name
        run_train(out[name], 2, *TP2, *extra)
    return out


def diff(ref: Path, cand: Path, *flags: str) -> tuple[int, dict, str]:
    report = cand.parent / f"{ref.name}-vs-{cand.name}.json"
    proc = subprocess.run(
        [str(TTRACE), "diff", "--no-cache", *flags, "--json", str(report), str(ref), str(cand)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode in (0, 1, 2, 3), proc.stderr
    return proc.returncode, json.loads(report.read_text()), proc.stdout + proc.stderr


def edited_copy(bundle: Path, name: str, edit) -> Path:  # type: ignore[no-untyped-def]
    """A copy of `bundle` whose manifest `edit` changed (the rank files are untouched)."""
    copy = bundle.parent / name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(bundle, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    edit(manifest)
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return copy


def by_module(report: dict) -> dict[str, dict]:
    return {m["name"]: m for m in report["modules"]}


def test_the_capture_records_versions_devices_switches_and_kernels(
    bundles: dict[str, Path],
) -> None:
    for name, kernel in (("ref", "einsum"), ("cand-bf16x3", "bf16x3")):
        env = json.loads((bundles[name] / "manifest.json").read_text())["environment"]
        assert {"python", "torch", "ttrace"} <= set(env["versions"]), env["versions"]
        assert env["devices"] and env["devices"][0].startswith("cpu")
        assert "float32_matmul_precision" in env["backends"]
        attention = env["kernels"]["layers.0.self_attention"]
        assert attention["class"] == "examples.gpt.layers.attention.Attention"
        assert len(attention["source_sha256"]) == 64
        assert attention["tag"] == f"attention={kernel}"
        assert "tag" not in env["kernels"]["layers.0.mlp"]


def test_the_same_environment_is_clean_and_allows_no_drift(bundles: dict[str, Path]) -> None:
    code, report, _ = diff(bundles["ref"], bundles["cand"])
    s = report["summary"]
    assert code == 0 and s["divergent"] == 0 and s["drift"] == 0, s
    assert s["environment_recorded"] and s["environment_changes"] == []
    assert s["drift_bound"] == 0


def test_a_changed_kernel_is_drift_at_that_op_not_hundreds_of_divergences(
    bundles: dict[str, Path],
) -> None:
    code, report, text = diff(bundles["ref"], bundles["cand-bf16x3"])
    s = report["summary"]
    assert code == 0 and s["verdict"] == "drift", s
    assert s["divergent"] == 0 and s["invalid"] == 0 and s["compared"] > 400, s
    assert s["drift"] > 100 and 1 < s["drift_max_ratio"] <= DRIFT_BOUND, s
    assert s["drift_bound"] == DRIFT_BOUND
    assert (
        "layers.0.self_attention kernel tag: attention=einsum (reference) vs "
        "attention=bf16x3 (candidate)" in s["environment_changes"]
    )
    modules = by_module(report)
    # Drift enters at the attention modules whose kernel changed, nowhere else.
    introduced = sorted(n for n, m in modules.items() if m["origin"] == "drift")
    assert introduced and all(n.startswith("layers.") for n in introduced), introduced
    assert all("self_attention" in n or n in ("layers.0", "layers.1") for n in introduced)
    assert modules["layers.0.self_attention"]["status"] == "drift"
    assert modules["layers.0.mlp"]["status"] in ("drift", "clean")
    assert "kernel-drift" in [d["code"] for d in report["diagnostics"]]
    assert "DRIFT: " in text and "environment  " in text

    # Without the recorded difference the same tensors are hundreds of divergences: drift
    # comes only from what the manifests say changed.
    def same_tag(m: dict) -> None:
        for kernel in m["environment"]["kernels"].values():
            if "tag" in kernel:
                kernel["tag"] = "attention=einsum"

    hidden = edited_copy(bundles["cand-bf16x3"], "cand-bf16x3-tag-hidden", same_tag)
    code, report, _ = diff(bundles["ref"], hidden)
    s = report["summary"]
    assert code == 1 and s["drift"] == 0 and s["divergent"] > 100, s


def test_a_change_of_precision_is_beyond_the_drift_bound(bundles: dict[str, Path]) -> None:
    code, report, _ = diff(bundles["ref"], bundles["cand-tf32"])
    s = report["summary"]
    assert code == 1 and s["verdict"] == "divergent", s
    assert s["max_ratio"] > DRIFT_BOUND and s["divergent"] > 100, s


def test_drift_does_not_hide_a_bug(bundles: dict[str, Path]) -> None:
    """The demo's bug under a changed kernel, and under a (simulated) torch upgrade that lets
    every module drift: caught in the same module as without any change."""
    code, plain, _ = diff(bundles["ref"], bundles["cand-bf16x3-bug"])
    assert code == 1, plain["summary"]
    first = plain["first_divergence"]
    assert first["module"] == "layers.0.input_layernorm", first

    def upgrade(m: dict) -> None:
        m["environment"]["versions"]["torch"] = "2.14.0"

    upgraded = edited_copy(bundles["cand-bf16x3-bug"], "cand-bug-torch-2.14", upgrade)
    code, report, _ = diff(bundles["ref"], upgraded)
    s = report["summary"]
    assert code == 1 and s["divergent"] > 0, s
    assert "torch version: " in " ".join(s["environment_changes"])
    assert report["first_divergence"]["module"] == first["module"]
    assert report["first_divergence"]["phase"] == first["phase"]


def test_a_simulated_torch_upgrade_alone_lets_every_module_drift(
    bundles: dict[str, Path],
) -> None:
    def upgrade(m: dict) -> None:
        m["environment"]["versions"]["torch"] = "2.14.0"
        for kernel in m["environment"]["kernels"].values():
            kernel.pop("tag", None)

    ref = edited_copy(bundles["ref"], "ref-untagged", lambda m: [
        k.pop("tag", None) for k in m["environment"]["kernels"].values()
    ])  # fmt: skip
    upgraded = edited_copy(bundles["cand-bf16x3"], "cand-bf16x3-torch-2.14", upgrade)
    code, report, _ = diff(ref, upgraded)
    s = report["summary"]
    assert code == 0 and s["divergent"] == 0 and s["drift"] > 100, s
    before = json.loads((ref / "manifest.json").read_text())["environment"]["versions"]["torch"]
    assert s["environment_changes"] == [
        f"torch version: {before} (reference) vs 2.14.0 (candidate)"
    ]
