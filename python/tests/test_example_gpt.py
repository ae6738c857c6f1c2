"""End-to-end: the example GPT under real multi-process torchrun (gloo, CPU) produces bundles
that validate, and every merged candidate tensor equals the reference to round-off."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import pytest
import torch

from ttrace.bundle.reader import BundleReader, compare_bundles, rel_error
from ttrace_testing.zoo_lib import run_train

REPO = Path(__file__).resolve().parents[2]

FP32_TOL = 1e-5
# One launcher for the example (through torchrun when nproc > 1, two layers) shared with the
# bug-zoo benchmarks; it raises with the run's output on failure.
run_example = run_train


def placement_kinds(bundle: Path) -> set[str]:
    """Which placement features the bundle's shards use (copy/sum/replica, flat, multi-box)."""
    kinds: set[str] = set()

    def visit(_: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset):
            a = obj.attrs
            kinds.add(str(a["combine"]))
            kinds.add(str(a["placement"]))
            if "boxes" in a and len(a["boxes"]) > 1:
                kinds.add("multi-box")

    for f in sorted(bundle.glob("rank-*.h5")):
        with h5py.File(f, "r") as h:
            h.visititems(visit)
    return kinds


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ref") / "bundle"
    run_example(out, 1, "--reference", "--perturbations", "2")
    return out


@pytest.fixture(scope="module")
def reference_moe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ref_moe") / "bundle"
    run_example(out, 1, "--reference", "--experts", "4")
    return out


def check_candidate(cand: Path, ref: Path, tol: float = FP32_TOL) -> dict:
    errors, problems = compare_bundles(cand, ref)
    assert problems == []
    assert errors, "no tensors compared"
    worst = max(errors, key=errors.get)
    assert errors[worst] < tol, f"{worst}: relative error {errors[worst]:.3e} >= {tol}"
    return errors


def test_reference_validates_with_perturbed_variants(reference: Path) -> None:
    reader = BundleReader(reference)
    assert reader.validate() == []
    manifest = json.loads((reference / "manifest.json").read_text())
    assert manifest["variants"] == ["nominal", "perturbed-1", "perturbed-2"]
    assert manifest["perturbation"]["scheme"] == "relative-uniform"
    assert manifest["perturbation"]["module"] == "embedding"
    assert manifest["modules"][0] == {
        "name": "embedding", "order": 0, "depth": 0, "type": "VocabParallelEmbedding",
    }  # fmt: skip
    depth = {m["name"]: m["depth"] for m in manifest["modules"]}
    assert depth["layers.1.mlp"] == 2 and depth["final_layernorm"] == 3
    # perturbed variants differ from nominal by round-off, not more, and not zero
    out = ("nominal", 0, 0, "layers.1", "forward_output", "0")
    err = rel_error(reader.merged(("perturbed-1", *out[1:])), reader.merged(out))
    assert 0 < err < 1e-5


@pytest.mark.parametrize(
    ("nproc", "args", "expected"),
    [
        (4, ("--tp", "2", "--pp", "2"), {"copy", "sum", "replica"}),
        (4, ("--tp", "2", "--dp", "2"), {"copy", "sum", "replica"}),
        (2, ("--cp", "2"), {"multi-box", "sum"}),
        (2, ("--dp", "2", "--dist-optimizer"), {"flat", "sum"}),
    ],
    ids=["tp2pp2", "tp2dp2", "cp2", "dp2-distopt"],
)
def test_candidate_matches_reference(
    tmp_path: Path, reference: Path, nproc: int, args: tuple[str, ...], expected: set[str]
) -> None:
    cand = tmp_path / "cand"
    run_example(cand, nproc, *args)
    check_candidate(cand, reference)  # validates both bundles and merges every tensor
    assert expected <= placement_kinds(cand)


def test_expert_parallel_matches_reference(tmp_path: Path, reference_moe: Path) -> None:
    cand = tmp_path / "cand"
    run_example(cand, 2, "--dp", "2", "--ep", "2", "--experts", "4")
    errors = check_candidate(cand, reference_moe)
    # global expert ids: rank 1 holds experts 2 and 3 under their global names
    assert any(i[3] == "layers.1.mlp.experts.local_experts.3" for i in errors)


def test_routing_replay(tmp_path: Path, reference_moe: Path) -> None:
    """The MoE reference records each token's expert; an EP2 candidate replaying it matches
    the reference (scores are still its own), and the recorded choices are the reference's
    own top-1 of the router scores it captured."""
    routing = reference_moe / "routing.pt"
    table = torch.load(routing, weights_only=True)["routing"]
    assert set(table) == {f"{it}/{mb}/2" for it in (0, 1) for mb in (0, 1)}
    scores = BundleReader(reference_moe).merged(
        ("nominal", 1, 1, "layers.1.mlp.router", "forward_output", "0")
    )  # [s, b, E] logits
    assert torch.equal(table["1/1/2"].long(), torch.as_tensor(scores).argmax(-1).T)
    cand = tmp_path / "cand"
    args = ("--dp", "2", "--ep", "2", "--experts", "4", "--routing-replay", str(routing))
    run_example(cand, 2, *args)
    check_candidate(cand, reference_moe)


def test_tied_embeddings_match_reference(tmp_path: Path) -> None:
    """--tie-embeddings: the last stage's copy of the embedding weight is captured as
    `embedding.weight` (param_grad a partial sum over the two stages, the rest replicas), and
    the head keeps its module name, so reference and PP2 candidate compare tensor for tensor."""
    ref, cand = tmp_path / "ref", tmp_path / "cand"
    run_example(ref, 1, "--reference", "--tie-embeddings", "--iterations", "1")
    run_example(cand, 2, "--pp", "2", "--tie-embeddings", "--iterations", "1")
    errors = check_candidate(cand, ref)
    names = {(i[3], i[4], i[5]) for i in errors}
    assert ("embedding", "param_grad", "weight") in names
    assert ("embedding", "param_after_step", "weight") in names
    assert ("output_layer", "forward_output", "0") in names
    assert not any(i[3] == "output_layer" and i[5] == "weight" for i in errors)
    for rank in (0, 1):  # both stages hold the tensor
        with h5py.File(cand / f"rank-{rank:05d}.h5", "r") as h:
            ds = h["nominal/iter_0/mb_0/embedding/param_grad/weight"]
            assert str(ds.attrs["combine"]) == "sum"
            assert int(ds.attrs["partial_index"]) == rank


@pytest.mark.slow
@pytest.mark.parametrize(
    ("nproc", "args"),
    [
        (4, ("--tp", "2", "--cp", "2")),
        (2, ("--tp", "2", "--no-sequence-parallel")),
        (4, ("--tp", "2", "--dp", "2", "--dist-optimizer")),
    ],
    ids=["tp2cp2", "tp2-nosp", "tp2dp2-distopt"],
)
def test_more_layouts_match_reference(
    tmp_path: Path, reference: Path, nproc: int, args: tuple[str, ...]
) -> None:
    cand = tmp_path / "cand"
    run_example(cand, nproc, *args)
    check_candidate(cand, reference)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("precision", "tol"), [("bf16", 0.1), ("bf16-autocast", 0.1), ("fp8", 1e-3)]
)
def test_precisions_match_reference(tmp_path: Path, precision: str, tol: float) -> None:
    ref, cand = tmp_path / "ref", tmp_path / "cand"
    run_example(ref, 1, "--reference", "--precision", precision)
    run_example(cand, 2, "--tp", "2", "--precision", precision)
    check_candidate(cand, ref, tol)
    manifest = json.loads((cand / "manifest.json").read_text())
    assert manifest["precision"] == precision
