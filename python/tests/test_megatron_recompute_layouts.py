"""Real Megatron-core activation recompute in the layouts besides TP2 full/selective
(`test_megatron_recompute.py`), captured with zero annotations: the tiny 2-layer `GPTModel`
of `megatron/gpt_train.py` (hidden 32) against single-process references that do not
recompute. Runs on the installed release (0.16.1 in `.venv`, ctest entry
`python_megatron_recompute_layouts`; 0.19.2 in `.venv312`,
`python_megatron_latest_recompute_layouts`).

- Dropout (`--dropout 0.1`: Megatron's hidden dropout, in the embedding and both
  bias-dropout-adds of every layer) under TP2 with full recompute: Megatron's
  `CheckpointFunction` restores the generator states its forward saved, so the recompute
  draws the forward's masks and the run is clean. The injected bug
  `recompute_rng_not_restored` (`megatron/bugs.py`: the restore does nothing) recomputes
  with other masks: exit 1, the first divergence the last layer's recompute
  (`decoder.layers.1@recompute`, the first recompute backward runs), introduced there; the
  original forward of the first step stays clean.
- A reference's perturbed variants draw the nominal run's dropout masks, attention dropout
  included (`--attention-dropout 0.1`): Megatron draws it from its RNG tracker's
  tensor-parallel state, which the variants restore with the device generators; without it
  the variants' attention outputs differ from the nominal one by 40 %, not by round-off.
- `--recompute block` (`recompute_method="block"`, `recompute_num_layers=1`): layer 0 is
  recomputed and compared, layer 1 runs once.
- PP2 with full recompute (one layer per stage): clean, and a stale pipeline activation is
  still found at the hand-off it arrives through (`decoder.layers.0@handoff`, named by the
  layer that sends it).

CPU shims of device calls only (`megatron/cpu_stubs.py`): the CUDA generator Megatron seeds,
forks and restores is the CPU generator the CPU ops draw from; Megatron's own RNG tracker and
recompute run unchanged.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from job_runner import diff, printed_counts, run_module

DROPOUT = ("--dropout", "0.1")
FULL = ("--recompute", "full")
# name -> (the candidate's arguments, its reference has dropout)
CONFIGS = {
    "tp2_full_dropout": (("--tp", "2", *FULL, *DROPOUT), True),
    "tp2_block": (("--tp", "2", "--recompute", "block"), False),
    "pp2_full": (("--pp", "2", *FULL), False),
}
# What each recompute must have filed, compared and clean: (module, kind, index).
RECOMPUTED = {
    "tp2_full_dropout": [
        ("decoder.layers.0@recompute", "forward_output", "0"),
        ("decoder.layers.1@recompute", "forward_output", "0"),
        ("decoder.layers.1.pre_mlp_layernorm@recompute", "forward_input", "0"),
    ],
    "tp2_block": [
        ("decoder.layers.0@recompute", "forward_output", "0"),
        ("decoder.layers.0.mlp.linear_fc2@recompute", "forward_output", "0"),
        ("decoder.layers.1", "forward_output", "0"),
    ],
    "pp2_full": [
        ("decoder.layers.0@recompute", "forward_output", "0"),
        ("decoder.layers.1@recompute", "forward_output", "0"),
        ("decoder.layers.0@handoff", "forward_output", "0"),
        ("decoder.layers.0@handoff", "input_grad", "0"),
    ],
}
# Modules that must not have been recomputed.
NOT_RECOMPUTED = {"tp2_block": "decoder.layers.1@recompute"}


def run(out: Path, nproc: int, args: tuple[str, ...] = (), bug: str = "none") -> None:
    run_module("tests.megatron.gpt_train", ["--out", str(out), *args, "--bug", bug], nproc, 900)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ref = tmp_path_factory.mktemp("megatron-recompute") / "reference"
    run(ref, 1)
    return ref


@pytest.fixture(scope="module")
def dropout_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ref = tmp_path_factory.mktemp("megatron-recompute-dropout") / "reference"
    run(ref, 1, DROPOUT)
    return ref


def reference_for(request: pytest.FixtureRequest, name: str) -> Path:
    return request.getfixturevalue("dropout_reference" if CONFIGS[name][1] else "reference")


def statuses(report: dict) -> dict[tuple[str, str, str, int], str]:
    """(module, kind, index, iteration) -> the worst status of its micro-batches."""
    out: dict[tuple[str, str, str, int], str] = {}
    for t in report["tensors"]:
        i = t["id"]
        key = (i["module"], i["kind"], str(i["index"]), i["iteration"])
        if out.get(key) != "divergent":
            out[key] = t["status"]
    return out


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_recomputed_run_is_clean(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    args, _ = CONFIGS[name]
    cand = tmp_path / name
    run(cand, 2, args)
    rc, report, text = diff(reference_for(request, name), cand, tmp_path)
    got = printed_counts(name, rc, report)
    assert (rc, got["divergent"], got["invalid"], got["missing"]) == (0, 0, 0, 0), text
    assert got["unresolved"] == 0 and got["compared"] > 1000, text
    seen = statuses(report)
    for module, kind, index in RECOMPUTED[name]:
        for iteration in (0, 1):  # every iteration's recompute, not only the first's
            assert seen.get((module, kind, index, iteration)) == "clean", (module, kind, index)
    modules = {t["id"]["module"] for t in report["tensors"]}
    assert NOT_RECOMPUTED.get(name) not in modules, sorted(modules)


def test_recompute_without_rng_restore_is_named(dropout_reference: Path, tmp_path: Path) -> None:
    name, bug = "tp2_full_dropout", "recompute_rng_not_restored"
    cand = tmp_path / bug
    run(cand, 2, CONFIGS[name][0], bug)
    rc, report, text = diff(dropout_reference, cand, tmp_path)
    got = printed_counts(f"{name} {bug}", rc, report)
    assert rc == 1 and got["divergent"] > 0, text
    assert (got["invalid"], got["missing"], got["unresolved"]) == (0, 0, 0), text
    first = report["first_divergence"]
    assert (first["iteration"], first["forward"]) == (0, "decoder.layers.1@recompute"), text
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    assert {"decoder.layers.1@recompute", "decoder.layers.0@recompute"} <= set(introduced)
    # The forward of the first step drew the reference's masks: only its recompute departs.
    seen = statuses(report)
    for layer in ("decoder.layers.0", "decoder.layers.1"):
        assert seen[(layer, "forward_output", "0", 0)] == "clean", layer
        assert seen[(f"{layer}@recompute", "forward_output", "0", 0)] == "divergent", layer
        assert seen[(f"{layer}@recompute", "forward_input", "hidden_states", 0)] == "clean"


def test_stale_activation_with_recompute_found_at_handoff(reference: Path, tmp_path: Path) -> None:
    name, bug, guilty = "pp2_full", "stale_activation", "decoder.layers.0@handoff"
    cand = tmp_path / bug
    run(cand, 2, CONFIGS[name][0], bug)
    rc, report, text = diff(reference, cand, tmp_path)
    got = printed_counts(f"{name} {bug}", rc, report)
    assert rc == 1 and got["divergent"] > 0, text
    assert (got["invalid"], got["missing"]) == (0, 0), text
    assert report["first_divergence"]["forward"] == guilty, text
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    assert introduced and introduced[0] == guilty, text


def test_reference_variants_draw_the_same_attention_masks(tmp_path: Path) -> None:
    ref = tmp_path / "attention-dropout"
    run(ref, 1, ("--attention-dropout", "0.1", *DROPOUT))
    path = "iter_{}/mb_0/decoder.layers.{}.self_attention.core_attention/forward_output/0"
    with h5py.File(ref / "rank-00000.h5") as f:
        for iteration in (0, 1):
            for layer in (0, 1):
                key = path.format(iteration, layer)
                nominal = f[f"nominal/{key}"][()]
                for variant in ("perturbed-1", "perturbed-2"):
                    error = np.linalg.norm(f[f"{variant}/{key}"][()] - nominal)
                    relative = error / np.linalg.norm(nominal)
                    assert relative < 1e-5, (key, variant, relative)
