"""Modules that run more than once per micro-batch, on real torch under DDP (2 gloo ranks)
against a single-process reference, compared by the real `ttrace diff` CLI.

- A shared block called twice: each call is its own record (`shared`, `shared@call1`), with
  its gradients, compared call by call; a second call that differs on one rank is named.
- `torch.utils.checkpoint` (reentrant and not) around the layers: the recomputed forward is
  filed as `<module>@recompute` and compared with the reference's forward (the reference
  does not recompute), gradients stay under the original call; a recompute that does not
  restore the random state (another feature mask) is a divergence at the recomputed mask.
- `torch.compile` per block (in place or wrapped, `fullgraph=True`): captured at each
  block's boundary against a reference compiled the same way; a model compiled as a whole
  is refused before the first step, saying what to change.
- Bundles of format version 1 still open in both readers.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import pytest
from job_runner import diff, run_module
from torch import nn

from ttrace.bundle.checksum import file_checksum
from ttrace.bundle.reader import BundleReader
from ttrace.capture import Tracer
from ttrace.capture.errors import TracerError

SCRIPT = "tests.frameworks.repeated_calls"


def capture(out: Path, nproc: int, *options: str) -> Path:
    run_module(SCRIPT, ["--out", str(out), *options], nproc, 120)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One process, no recompute, perturbations=2."""
    return capture(tmp_path_factory.mktemp("ref") / "ref", 1, "--recompute", "none")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 2-rank DDP candidate without recompute: the shared block runs twice."""
    return capture(tmp_path_factory.mktemp("shared") / "shared", 2, "--recompute", "none")


def clean(report: dict, rc: int, text: str) -> None:
    s = report["summary"]
    assert (rc, s["invalid"], s["missing"], s["divergent"]) == (0, 0, 0, 0), text
    assert s["clean"], text


def tensors_of(report: dict, module: str) -> list[dict]:
    return [t for t in report["tensors"] if t["id"]["module"] == module]


def introduced(report: dict) -> list[str]:
    return [m["name"] for m in report["modules"] if m["origin"] == "introduced"]


def test_shared_block_each_call_compared(reference: Path, shared: Path, tmp_path: Path) -> None:
    cand = shared
    rc, report, text = diff(reference, cand, tmp_path)
    clean(report, rc, text)
    manifest = json.loads((cand / "manifest.json").read_text())
    assert manifest["format_version"] == 2
    names = [m["name"] for m in manifest["modules"]]
    # The second call runs after the layers, at their depth + 1; call 0 keeps its name.
    assert names.index("shared@call1") > names.index("layers.1") > names.index("shared"), names
    for module in ("shared", "shared@call1", "shared.fc1@call1"):
        kinds = {t["id"]["kind"] for t in tensors_of(report, module) if t["status"] == "clean"}
        assert {"forward_input", "forward_output", "output_grad", "input_grad"} <= kinds, module
    # Parameters and their gradients exist once, under the module's own name.
    assert not [t for t in tensors_of(report, "shared.fc1@call1") if "param" in t["id"]["kind"]]


def test_second_call_that_differs_is_named(reference: Path, tmp_path: Path) -> None:
    cand = capture(tmp_path / "second", 2, "--recompute", "none", "--bug", "second-call")
    rc, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    assert rc == 1 and s["divergent"] > 0 and (s["invalid"], s["missing"]) == (0, 0), text
    first = report["first_divergence"]
    assert (first["forward"], first["ranks"]) == ("shared@call1", [1]), first
    assert "shared@call1" in introduced(report), text
    # The first call is right.
    first_call = [
        t
        for t in tensors_of(report, "shared")
        if t["id"]["iteration"] == 0 and t["id"]["kind"] == "forward_output"
    ]
    assert first_call and all(t["status"] == "clean" for t in first_call), text


@pytest.mark.parametrize("mode", ["reentrant", "nonreentrant"])
def test_recompute_compared_with_forward(reference: Path, mode: str, tmp_path: Path) -> None:
    cand = capture(tmp_path / mode, 2, "--recompute", mode)
    rc, report, text = diff(reference, cand, tmp_path)
    clean(report, rc, text)
    recomputed = [t for t in report["tensors"] if t["id"]["module"].endswith("@recompute")]
    modules = {t["id"]["module"] for t in recomputed}
    assert {"layers.0@recompute", "layers.1.mask@recompute"} <= modules, sorted(modules)
    assert {t["id"]["kind"] for t in recomputed} == {"forward_input", "forward_output"}
    # Not a second call; gradients are filed under the original call in both modes.
    calls = {t["id"]["module"] for t in report["tensors"] if "@call" in t["id"]["module"]}
    assert calls and all(m.startswith("shared") for m in calls), sorted(calls)
    kinds = {t["id"]["kind"] for t in tensors_of(report, "layers.0.fc1")}
    assert {"output_grad", "input_grad", "param_grad", "forward_output"} <= kinds, kinds


@pytest.mark.parametrize("mode", ["reentrant", "nonreentrant"])
def test_recompute_without_rng_restore_is_named(reference: Path, mode: str, tmp_path: Path) -> None:
    cand = capture(tmp_path / f"rng-{mode}", 2, "--recompute", mode, "--bug", "rng")
    rc, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    assert rc == 1 and s["divergent"] > 0 and (s["invalid"], s["missing"]) == (0, 0), text
    first = report["first_divergence"]["forward"]
    assert first is not None and first.endswith("@recompute"), report["first_divergence"]
    assert {"layers.0.mask@recompute", "layers.1.mask@recompute"} <= set(introduced(report))
    # The original forward of the first step is right: only its recompute departs.
    original = [
        t
        for t in report["tensors"]
        if t["id"]["iteration"] == 0
        and t["id"]["kind"] == "forward_output"
        and "@" not in t["id"]["module"]
    ]
    assert original and all(t["status"] == "clean" for t in original), text


def as_version_1(bundle: Path, target: Path) -> Path:
    """`bundle` rewritten as format version 1 (what readers of the old format wrote)."""
    shutil.copytree(bundle, target)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["format_version"] = 1
    for entry in manifest["ranks"]:
        path = target / entry["file"]
        with h5py.File(path, "r+") as f:
            f.attrs["format_version"] = 1
        entry["file_size"], entry["crc32"] = file_checksum(path)
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return target


def test_version_1_bundles_still_open(reference: Path, shared: Path, tmp_path: Path) -> None:
    old = as_version_1(reference, tmp_path / "ref-v1")
    with BundleReader(old) as reader:
        assert reader.validate() == []
    rc, report, text = diff(old, shared, tmp_path)
    clean(report, rc, text)


@pytest.fixture(scope="module")
def compiled_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference compiled as the candidate is (per block): the compiled numerics, and
    the same random numbers (inductor draws its own)."""
    out = tmp_path_factory.mktemp("cref") / "cref"
    return capture(out, 1, "--recompute", "none", "--compile", "blocks")


@pytest.mark.parametrize("how", ["blocks", "wrapped"])
def test_compiled_blocks_captured_at_their_boundary(
    compiled_reference: Path, how: str, tmp_path: Path
) -> None:
    """`block.compile(fullgraph=True)` and `torch.compile(block, fullgraph=True)`: no graph
    break, the block's own inputs, outputs and gradients, and its parameters, compared."""
    cand = capture(tmp_path / how, 2, "--recompute", "none", "--compile", how)
    rc, report, text = diff(compiled_reference, cand, tmp_path)
    clean(report, rc, text)
    kinds = {t["id"]["kind"] for t in tensors_of(report, "layers.0")}
    assert {"forward_input", "forward_output", "output_grad", "input_grad"} <= kinds, kinds
    inner = {t["id"]["kind"] for t in tensors_of(report, "layers.0.fc1")}
    assert inner == {"parameter", "param_grad", "main_grad", "param_after_step", "optimizer_state"}
    modules = [m["name"] for m in json.loads((cand / "manifest.json").read_text())["modules"]]
    assert "layers.0.fc1" in modules and not [m for m in modules if "_orig_mod" in m], modules


def test_whole_model_compiled_refused_before_the_first_step(tmp_path: Path) -> None:
    out = tmp_path / "whole"
    with pytest.raises(AssertionError) as failed:
        capture(out, 1, "--recompute", "none", "--compile", "whole")
    message = str(failed.value)
    assert "TracerError" in message and "compiled as a whole" in message, message[-2000:]
    assert "block.compile(fullgraph=True)" in message and "fullgraph=True" in message
    assert not (out / "manifest.json").exists() and not list(out.glob("rank-*.h5"))


def test_whole_model_compiled_in_place_refused_before_any_file(tmp_path: Path) -> None:
    """`model.compile(fullgraph=True)` (nn.Module's own compile) refused as the wrapper is,
    naming the call the user wrote, before the tracer writes anything."""
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 4))
    model.compile(fullgraph=True)
    out = tmp_path / "in-place"
    with pytest.raises(TracerError) as refused:
        Tracer(model, None, out)
    message = str(refused.value)
    assert "compiled as a whole (model.compile(fullgraph=True))" in message, message
    assert "block.compile(fullgraph=True)" in message, message
    assert not out.exists() or not list(out.iterdir())


def test_reference_recompute_records_left_out(shared: Path, tmp_path: Path) -> None:
    """A reference that recomputes, a candidate that does not: the reference's recompute
    records have nothing to be compared with and are left out, the rest is clean."""
    ref = capture(tmp_path / "ref-recompute", 1, "--recompute", "nonreentrant")
    assert any(
        m["name"].endswith("@recompute")
        for m in json.loads((ref / "manifest.json").read_text())["modules"]
    )
    rc, report, text = diff(ref, shared, tmp_path)
    clean(report, rc, text)
    assert not [t for t in report["tensors"] if t["id"]["module"].endswith("@recompute")]


def test_compiled_blocks_against_an_eager_reference(tmp_path: Path) -> None:
    """The user's other choice: an uncompiled reference. The blocks are compared at their
    boundaries, the reference's activations inside them are left out with a warning that
    says so (no dropout here: inductor draws its random numbers its own way)."""
    ref = capture(tmp_path / "eager", 1, "--recompute", "none", "--keep", "1.0")
    cand = capture(
        tmp_path / "compiled", 2, "--recompute", "none", "--compile", "blocks", "--keep", "1.0"
    )
    rc, report, text = diff(ref, cand, tmp_path)
    clean(report, rc, text)
    warnings = [d for d in report["diagnostics"] if d["code"] == "compiled-blocks"]
    assert len(warnings) == 1 and "compiled blocks" in warnings[0]["message"], text
    assert {t["id"]["kind"] for t in tensors_of(report, "layers.0.fc1")} == {
        "parameter",
        "param_grad",
        "main_grad",
        "param_after_step",
        "optimizer_state",
    }
    assert {"forward_output", "input_grad"} <= {
        t["id"]["kind"] for t in tensors_of(report, "layers.0")
    }
