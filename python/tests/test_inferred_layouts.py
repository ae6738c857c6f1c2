"""Inferred placements are hypotheses with alternatives, settled at compare time by the
reference's shapes (docs/bundle-format.md, "Inferred placements"), on real torch code with
0 annotations and the README's capture lines, compared by the real `ttrace diff` CLI.

- DDP's `dim` only suggests the activation order: a sequence-first `[seq, batch, features]`
  model under plain `DistributedDataParallel` (2 gloo ranks) is captured batch-first by that
  hint, sequence-first as the alternative, and the comparison keeps the only one that
  rebuilds the reference's shapes.
- FSDP2 (`fully_shard`, 2 gloo ranks) declares no batch dimension: 2-d `[batch, features]`
  activations are settled the same way.
- A bundle whose rank files lack the alternatives (written before them) still opens in both
  readers and compares its stored placements as before.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import pytest
from job_runner import diff, run_module

from ttrace.bundle.checksum import file_checksum
from ttrace.bundle.reader import BundleReader

ACTIVATIONS = ("forward_input", "forward_output", "output_grad", "input_grad")


def run_mlp(out: Path, nproc: int, *extra: str) -> None:
    run_module("tests.frameworks.mlp_ddp", ["--out", str(out), *extra], nproc, 240)


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("inferred")
    refs = {"2d": base / "ref-2d", "sb": base / "ref-sb"}
    run_mlp(refs["2d"], 1)
    run_mlp(refs["sb"], 1, "--seq-first")
    return refs


def counts(report: dict) -> tuple[int, ...]:
    s = report["summary"]
    return (s["divergent"], s["invalid"], s["missing"], s["unresolved"])


def test_sequence_first_model_under_ddp_merges_on_its_batch_dim(
    references: dict[str, Path], tmp_path: Path
) -> None:
    cand = tmp_path / "cand-sb"
    run_mlp(cand, 2, "--seq-first")
    # Capture lays the activations out by DDP's hint (batch-first), labelled inferred, with
    # the other order as the alternative.
    reader = BundleReader(cand)
    fc1 = next(i for i in reader.identities() if i[3] == "fc1" and i[4] == "forward_output")
    shard = reader.shards(fc1)[0]
    assert (shard.source, shard.hypothesis) == ("inferred", "batch-first (bs)")
    assert [a["label"] for a in shard.alternatives] == ["sequence-first (sb)"]

    rc, report, text = diff(references["sb"], cand, tmp_path)
    assert (rc, *counts(report)) == (0, 0, 0, 0, 0), text
    assert report["summary"]["compared"] >= 100, text
    activations = [t for t in report["tensors"] if t["id"]["kind"] in ACTIVATIONS]
    assert activations and all(t["status"] == "clean" for t in activations), text
    chosen = {t["placement_resolution"]["chosen"] for t in activations}
    assert chosen == {"sequence-first (sb)"}, chosen
    assert {t["placement_source"] for t in activations} == {"inferred"}
    params = [t for t in report["tensors"] if t["id"]["kind"] == "param_grad"]
    assert params and {t["placement_source"] for t in params} == {"declared"}


def test_fsdp2_two_dim_activations_are_settled_by_the_reference(
    references: dict[str, Path], tmp_path: Path
) -> None:
    cand = tmp_path / "cand-fsdp"
    run_mlp(cand, 2, "--fsdp")
    rc, report, text = diff(references["2d"], cand, tmp_path)
    assert (rc, *counts(report)) == (0, 0, 0, 0, 0), text
    assert report["summary"]["compared"] >= 70, text
    outputs = {
        (t["id"]["iteration"], t["id"]["module"])
        for t in report["tensors"]
        if t["id"]["kind"] == "forward_output" and t["status"] == "clean"
    }
    assert {(i, m) for i in (0, 1) for m in ("fc1", "norm", "act", "fc2")} <= outputs, text


def datasets(f: h5py.File) -> list[h5py.Dataset]:
    found: list[h5py.Dataset] = []
    f.visititems(lambda _, o: found.append(o) if isinstance(o, h5py.Dataset) else None)
    return found


def strip_alternatives(bundle: Path) -> int:
    """Remove the hypothesis and alternatives from every rank file, as in a bundle written
    before them; the manifest's sizes and checksums are brought up to date."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    removed = 0
    for entry in manifest["ranks"]:
        path = bundle / entry["file"]
        with h5py.File(path, "r+") as f:
            for d in datasets(f):
                for name in ("placement_hypothesis", "placement_alternatives"):
                    if name in d.attrs:
                        del d.attrs[name]
                        removed += 1
        entry["file_size"], entry["crc32"] = file_checksum(path)
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return removed


def test_bundles_without_alternatives_compare_their_stored_placement(
    references: dict[str, Path], tmp_path: Path
) -> None:
    cand = tmp_path / "cand-2d"
    run_mlp(cand, 2)
    old = tmp_path / "old"
    shutil.copytree(cand, old)
    assert strip_alternatives(old) > 100
    reader = BundleReader(old)
    assert not any(s.alternatives for i in reader.identities()[:20] for s in reader.shards(i))
    # DDP's hint (batch-first) is right for this model: the stored placements merge.
    rc, report, text = diff(references["2d"], old, tmp_path)
    assert (rc, *counts(report)) == (0, 0, 0, 0, 0), text
    assert all(t["placement_resolution"] is None for t in report["tensors"])


PARAM_KINDS = ("parameter", "param_grad", "main_grad", "param_after_step", "optimizer_state")


def test_an_undeclared_split_parameter_is_initialized_and_compared_by_its_shape(
    tmp_path: Path,
) -> None:
    """torch TP + SP with a per-head offset split by heads but declared by nothing:
    `seeded_init(reference=)` gives each rank its heads' slice, capture records it as an
    inferred replica with the split as the alternative, and the comparison compares it by
    the reference's shape, reporting the placement as inferred and undeclared."""
    ref, cand = tmp_path / "ref", tmp_path / "cand"
    run_module("tests.frameworks.tp_head_offset", ["--out", str(ref)], 1, 240)
    args = ["--out", str(cand), "--reference", str(ref)]
    run_module("tests.frameworks.tp_head_offset", args, 2, 240)
    rc, report, text = diff(ref, cand, tmp_path)
    assert (rc, *counts(report)) == (0, 0, 0, 0, 0), text
    offsets = [
        t
        for t in report["tensors"]
        if t["id"]["kind"] in PARAM_KINDS and t["id"]["index"].endswith("head_offset")
    ]
    assert {t["id"]["kind"] for t in offsets} == set(PARAM_KINDS), text
    for t in offsets:
        assert t["status"] == "clean" and t["placement_source"] == "inferred", t
        resolution = t["placement_resolution"]
        assert resolution["hypothesis"] == "replica over tp (undeclared)", resolution
        assert resolution["chosen"] == "split dim 0 over tp (undeclared)", resolution
