"""Every placement records where it came from (`placement_source`: declared, inferred or
annotated), through the bundle, both readers and the diff JSON; a bundle written before the
attribute still compares, its sources reported as unknown (null).

Real parts: a DDP candidate of the tiny MLP on 2 gloo ranks (its parameters declared: DDP
replicates them, there is no tensor parallelism to infer; its activations inferred: DDP's
`dim` only suggests which dimension is the batch, the comparison settles it), parameters
annotated by hand in one process, the real `ttrace diff` CLI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import torch
from job_runner import diff, run_module
from torch import nn

import ttrace.capture as ttc
from ttrace.bundle import Placement
from ttrace.bundle.checksum import file_checksum
from ttrace.bundle.reader import BundleReader


def run_mlp(out: Path, nproc: int) -> None:
    run_module("tests.frameworks.mlp_ddp", ["--out", str(out)], nproc, 120)


def datasets(f: h5py.File) -> list[h5py.Dataset]:
    found: list[h5py.Dataset] = []
    f.visititems(lambda _, o: found.append(o) if isinstance(o, h5py.Dataset) else None)
    return found


def strip_sources(bundle: Path) -> int:
    """Remove `placement_source` from every rank file, as a bundle written before it was
    added; the manifest's sizes and checksums are brought up to date. Returns how many."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    removed = 0
    for entry in manifest["ranks"]:
        path = bundle / entry["file"]
        with h5py.File(path, "r+") as f:
            for d in datasets(f):
                if "placement_source" in d.attrs:
                    del d.attrs["placement_source"]
                    removed += 1
        entry["file_size"], entry["crc32"] = file_checksum(path)
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return removed


def test_sources_reach_the_report_and_older_bundles_say_unknown(tmp_path: Path) -> None:
    ref, cand = tmp_path / "ref", tmp_path / "cand"
    run_mlp(ref, 1)
    run_mlp(cand, 2)
    reader = BundleReader(cand)
    identity = next(i for i in reader.identities() if i[4] == "forward_output")
    assert {s.source for s in reader.shards(identity)} == {"inferred"}

    rc, report, text = diff(ref, cand, tmp_path)
    assert rc == 0 and report["summary"]["compared"] > 90, text
    by_kind: dict[str, set[str]] = {}
    for t in report["tensors"]:
        by_kind.setdefault(t["id"]["kind"], set()).add(t["placement_source"])
    for kind in ("parameter", "param_grad", "main_grad", "param_after_step"):
        assert by_kind[kind] == {"declared"}, (kind, text)
    for kind in ("forward_input", "forward_output", "output_grad"):
        assert by_kind[kind] == {"inferred"}, (kind, text)

    old = tmp_path / "old"
    shutil.copytree(cand, old)
    assert strip_sources(old) > 100
    rc, report, text = diff(ref, old, tmp_path)
    assert rc == 0 and report["summary"]["compared"] > 90, text
    assert {t["placement_source"] for t in report["tensors"]} == {None}, text


def test_annotated_placements_are_recorded_as_annotated(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    ttc.annotate(model[0].weight, Placement.full((4, 4)))
    ttc.annotate(model[1], outputs="replica")
    tracer = ttc.Tracer(model, None, tmp_path / "b", role="reference")
    with tracer.step(0):
        model(torch.randn(2, 4)).sum().backward()
    tracer.close()
    reader = BundleReader(tmp_path / "b")
    sources = {}
    for identity in reader.identities():
        (shard,) = reader.shards(identity)
        sources[(identity[3], identity[4], identity[5])] = shard.source
    assert sources[("0", "parameter", "weight")] == "annotated"
    assert sources[("1", "forward_output", "0")] == "annotated"
    # Nothing to infer in one process: the rest is as the job declares it.
    assert sources[("0", "parameter", "bias")] == "declared"
    assert sources[("0", "forward_input", "0")] == "declared"
