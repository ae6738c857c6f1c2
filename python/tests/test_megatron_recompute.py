"""Real Megatron-core activation recompute captured with zero annotations: the tiny `GPTModel`
of `megatron/gpt_train.py` on TP2 with Megatron's own recompute, against a single-process
reference without recompute. Runs on the installed release (0.16.1 in `.venv`, ctest entry
`python_megatron_recompute`; 0.19.2 in `.venv312`, `python_megatron_latest_recompute`).

- `--recompute full`: `recompute_granularity="full"`, `recompute_method="uniform"`, one layer
  per checkpoint: every layer's forward runs under no_grad, and again in backward (Megatron's
  reentrant `CheckpointFunction`);
- `--recompute selective`: each layer's core attention is recomputed (Megatron's default
  `recompute_modules`).

Correct runs must be clean (exit 0, nothing invalid, missing or divergent), with no "written
twice" crash: each recomputed forward is filed as `<call>@recompute` under the call it
recomputes and compared with the reference's original forward, and the gradients only the
recompute's graph produces are filed under the original call's names. A bug injected into a
recomputed layer's forward (`scale_rank`, `megatron/bugs.py`: tp rank 1's partial sum of
`decoder.layers.1.self_attention.linear_proj` scaled by 1 + 1e-3, in the first forward and in
the recompute alike) must exit 1, introduced at that module.

CPU shims of device calls only (`megatron/cpu_stubs.py`); for recompute: the CUDA generator
state Megatron saves and restores next to the CPU one is empty (there is no CUDA generator).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from job_runner import diff, printed_counts, run_module

CONFIGS = {
    "full": ("--tp", "2", "--recompute", "full"),
    "selective": ("--tp", "2", "--recompute", "selective"),
}
# What each recompute must have filed, compared and clean: (module, kind, index).
RECOMPUTED = {
    "full": [
        ("decoder.layers.1@recompute", "forward_output", "0"),
        ("decoder.layers.0.mlp.linear_fc2@recompute", "forward_output", "0"),
        ("decoder.layers.1", "input_grad", "hidden_states"),
    ],
    "selective": [
        ("decoder.layers.0.self_attention.core_attention@recompute", "forward_output", "0"),
        ("decoder.layers.1.self_attention.core_attention", "input_grad", "0"),
    ],
}
BUG, GUILTY = "scale_rank", "decoder.layers.1.self_attention.linear_proj"


def run(out: Path, nproc: int, args: tuple[str, ...] = (), bug: str = "none") -> None:
    run_module("tests.megatron.gpt_train", ["--out", str(out), *args, "--bug", bug], nproc, 900)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ref = tmp_path_factory.mktemp("megatron-recompute") / "reference"
    run(ref, 1)
    return ref


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_recomputed_run_is_clean(name: str, reference: Path, tmp_path: Path) -> None:
    cand = tmp_path / name
    run(cand, 2, CONFIGS[name])
    rc, report, text = diff(reference, cand, tmp_path)
    got = printed_counts(name, rc, report)
    assert (rc, got["divergent"], got["invalid"], got["missing"]) == (0, 0, 0, 0), text
    assert got["compared"] > 1000, text
    clean = {
        (t["id"]["module"], t["id"]["kind"], str(t["id"]["index"]))
        for t in report["tensors"]
        if t["status"] == "clean"
    }
    for row in RECOMPUTED[name]:
        assert row in clean, row
    # Every iteration's recomputed forwards, not only the first's.
    recomputed = [t for t in report["tensors"] if t["id"]["module"].endswith("@recompute")]
    assert {t["id"]["iteration"] for t in recomputed} == {0, 1}


def test_bug_in_a_recomputed_layer_is_named(reference: Path, tmp_path: Path) -> None:
    cand = tmp_path / f"full-{BUG}"
    run(cand, 2, CONFIGS["full"], BUG)
    rc, report, text = diff(reference, cand, tmp_path)
    got = printed_counts(f"full {BUG}", rc, report)
    assert rc == 1 and got["divergent"] > 0, text
    assert (got["invalid"], got["missing"]) == (0, 0), text
    first = report["first_divergence"]
    assert (first["iteration"], first["phase"], first["forward"]) == (0, "forward", GUILTY)
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    assert GUILTY in introduced, introduced
    # The recompute runs the same wrong code: it diverges too, where the original does.
    wrong = {t["id"]["module"] for t in report["tensors"] if t["status"] == "divergent"}
    assert f"{GUILTY}@recompute" in wrong, sorted(wrong)[:20]
