"""The numpy reader's merge semantics and structural checks on hand-made bundles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from ttrace.bundle import BundleWriter, Placement, TensorKey, write_manifest
from ttrace.bundle.reader import BundleError, BundleReader

KEY = TensorKey("nominal", 0, 0, "m", "forward_output", "0")
ID = ("nominal", 0, 0, "m", "forward_output", "0")


def bundle(path: Path, shards: list[tuple[torch.Tensor, Placement]]) -> BundleReader:
    records = []
    for rank, (t, p) in enumerate(shards):
        w = BundleWriter(path, rank, len(shards), "candidate", {"dp": rank})
        w.write(KEY, t, p)
        records.append(w.close())
    write_manifest(
        path, role="candidate", world_size=len(shards), parallel={"dp": len(shards)},
        precision="fp32", variants=["nominal"], modules=[], iterations=[0], micro_batches=1,
        ranks=records,
    )  # fmt: skip
    return BundleReader(path)


def test_copy_split_and_two_chunk(tmp_path: Path) -> None:
    full = torch.arange(8.0).reshape(8, 1)
    r = bundle(
        tmp_path,
        [
            (full[[0, 1, 6, 7]], Placement.cp_two_chunk((8, 1), 0, 0, 2)),
            (full[[2, 3, 4, 5]], Placement.cp_two_chunk((8, 1), 0, 1, 2)),
        ],
    )
    assert r.validate() == []
    assert (r.merged(ID) == full.numpy()).all()


def test_sum_partials_with_replicas_and_flat(tmp_path: Path) -> None:
    a, b = torch.ones(2, 3), torch.full((2, 3), 2.0)
    r = bundle(
        tmp_path / "sum",
        [
            (a, Placement.full((2, 3)).with_partial(0)),
            (b, Placement.full((2, 3)).with_partial(1)),
            (b, Placement.full((2, 3)).with_partial(1)),
        ],
    )
    assert (r.merged(ID) == 3.0).all()
    f = bundle(
        tmp_path / "flat",
        [
            (torch.tensor([0.0, 1.0, 2.0]), Placement.flat((2, 3), [(0, 0, 3)])),
            (torch.tensor([3.0, 4.0, 5.0]), Placement.flat((2, 3), [(0, 3, 3)])),
        ],
    )
    assert (f.merged(ID) == np.arange(6.0).reshape(2, 3)).all()


@pytest.mark.parametrize(
    ("shards", "message"),
    [
        ([(torch.ones(2), Placement.split((4,), 0, 0, 2))], "hole: index \\(2,\\)"),
        (
            [
                (torch.ones(4), Placement.full((4,))),
                (torch.ones(2), Placement.split((4,), 0, 1, 2)),
            ],
            "overlap under 'copy'",
        ),
        (
            [
                (torch.ones(4), Placement.full((4,), "replica")),
                (torch.tensor([1.0, 1.0, 1.5, 1.0]), Placement.full((4,), "replica")),
            ],
            "replicas disagree: rank 1 and rank 0",
        ),
    ],
    ids=["hole", "overlap", "replica"],
)
def test_merge_errors(tmp_path: Path, shards: list, message: str) -> None:
    r = bundle(tmp_path, shards)
    with pytest.raises(BundleError, match=message):
        r.merged(ID)
    assert any("forward_output" in p for p in r.validate())


def test_missing_rank_file_and_bad_counts(tmp_path: Path) -> None:
    r = bundle(tmp_path, [(torch.ones(2), Placement.split((4,), 0, i, 2)) for i in range(2)])
    r.close()
    (tmp_path / "rank-00001.h5").unlink()
    assert "rank 1: rank-00001.h5 is missing" in BundleReader(tmp_path).validate()
    with pytest.raises(BundleError, match="missing manifest"):
        BundleReader(tmp_path / "nowhere")
