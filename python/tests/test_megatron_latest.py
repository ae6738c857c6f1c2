"""Real Megatron-core, its newest release (0.19.2) as shipped, on Python 3.12 (its own
environment, `.venv312`, ctest entry `python_megatron_latest`), captured with zero
annotations: the tiny `GPTModel` of `megatron/gpt_train.py` (local layer spec, Megatron's
DDP, `get_megatron_optimizer`, the no-pipelining schedule) on gloo against a single-process
reference.

Correct runs must be clean: TP2, DP2, TP2 + sequence parallelism, TP2 x DP2 with the
distributed optimizer, and TP2 with the release's newer features together: a learnable softmax
offset (an attention sink) marked tensor-parallel as its heads are (the upstream fix of the
release's unmarked offset), a multi-token-prediction layer, a loss over the global token count
(Megatron's `calculate_per_token_loss`) and rows padded to different lengths.

A silent bug of the release as shipped, unpatched: `process_mtp_loss` scales the MTP loss
under `calculate_per_token_loss` by the rank's own token counts (its count before the roll
over its count after it) instead of the global ones; with data-parallel ranks holding
different token counts the MTP gradients of each rank are off by its own factor. The diff must
exit 1 with nothing invalid or missing, the first backward divergence at the gradient the MTP
loss hands to the output layer, each rank's slice scaled by the factor its counts give.

CPU shims (`megatron/cpu_stubs.py`), device calls only: `torch.cuda.current_device()` is the
CPU; a literal `device="cuda"` in tensor factories becomes the CPU; `Tensor.type()` answers the
CUDA type name; `torch.cuda.current_stream()` is a stream with nothing to wait for (0.19 waits
on CUDA-graph events before its gradient reduction); the CUDA RNG tracker forks nothing
(dropout 0); Apex's fused layer-norm kernel is `F.layer_norm`. None replaces a reduction or a
placement.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest
from job_runner import diff, run_module

SCRIPT = Path(__file__).resolve().parent / "megatron" / "gpt_train.py"
RELEASE = "0.19.2"
# The newer features in one model (one reference, one clean run, one buggy run: CI time).
FEATURES = (
    *("--softmax", "learnable", "--mark-softmax-offset"),
    *("--mtp", "1", "--per-token-loss", "--padding"),
)


@dataclass(frozen=True)
class Config:
    nproc: int
    args: tuple[str, ...]
    reference: str = "plain"


REFERENCES = {"plain": (), "features": FEATURES}
CONFIGS = {
    "tp2": Config(2, ("--tp", "2")),
    "dp2": Config(2, ()),
    "tp2_sp": Config(2, ("--tp", "2", "--sp")),
    "tp2_dp2": Config(4, ("--tp", "2", "--dist-optimizer")),
    "features_tp2": Config(2, ("--tp", "2", *FEATURES), "features"),
}


def run(out: Path, nproc: int, args: tuple[str, ...] = ()) -> None:
    run_module("tests.megatron.gpt_train", ["--out", str(out), *args], nproc, 900)


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("megatron-latest-references")
    refs = {name: base / name for name in REFERENCES}
    for name, args in REFERENCES.items():
        run(refs[name], 1, args)
    return refs


def counts(name: str, report: dict) -> dict:
    s = report["summary"]
    picked = {k: s[k] for k in ("compared", "divergent", "invalid", "missing")}
    print(f"\n{name}: {picked} first forward divergence {report['first_divergence']['forward']}")
    return picked


def test_installed_release_is_the_newest() -> None:
    assert version("megatron-core") == RELEASE


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_correct_run_is_clean(name: str, references: dict[str, Path], tmp_path: Path) -> None:
    config = CONFIGS[name]
    cand = tmp_path / name
    run(cand, config.nproc, config.args)
    rc, report, text = diff(references[config.reference], cand, tmp_path)
    got = counts(name, report)
    assert (rc, got["divergent"], got["invalid"], got["missing"]) == (0, 0, 0, 0), text
    assert report["summary"]["clean"] and got["compared"] > 1000, text
    clean = [t["id"] for t in report["tensors"] if t["status"] == "clean"]
    kinds = {i["kind"] for i in clean}
    assert {"optimizer_state", "param_grad", "main_grad", "input_grad", "output_grad"} <= kinds
    assert {i["iteration"] for i in clean} == {0, 1}
    if config.reference == "features":
        # The offset itself, handed to the softmax as an argument, and its gradient there.
        attention = "decoder.layers.0.self_attention.core_attention"
        modules = {(i["module"], i["kind"], i["index"]) for i in clean}
        assert (attention, "main_grad", "softmax_offset") in modules
        assert (f"{attention}.scale_mask_softmax", "forward_input", "2") in modules
        assert (f"{attention}.scale_mask_softmax", "input_grad", "2") in modules
        # The MTP layer, and the output layer's second call (the main logits after MTP's).
        assert ("mtp.layers.0", "forward_input", "input_ids") in modules
        assert ("output_layer@call1", "input_grad", "0") in modules


def harness_sizes() -> dict[str, int]:
    """The model and batch sizes `gpt_train.py` assigns (read from its source: importing it
    would install its CPU shims into this process)."""
    for node in ast.parse(SCRIPT.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            names = [t.id for t in node.targets[0].elts if isinstance(t, ast.Name)]
            if "SEQ" in names:
                return dict(zip(names, ast.literal_eval(node.value), strict=True))
    raise AssertionError(f"no SEQ, BATCH assignment in {SCRIPT}")


def mtp_rank_factors(dp: int) -> list[float]:
    """Each data-parallel rank's factor on its MTP gradients under the shipped scaling: its
    own (tokens / tokens after the roll) over the global one, from `gpt_train`'s padding (row
    r keeps SEQ - 3 r tokens; the roll drops one more of each row)."""
    sizes = harness_sizes()
    SEQ, BATCH = sizes["SEQ"], sizes["BATCH"]
    valid = [SEQ - 3 * r for r in range(BATCH)]
    rows = BATCH // dp

    def ratio(lengths: list[int]) -> float:
        return sum(lengths) / sum(n - 1 for n in lengths)

    whole = ratio(valid)
    return [ratio(valid[k * rows : (k + 1) * rows]) / whole for k in range(dp)]


def test_mtp_loss_scaled_by_local_token_counts_is_found(
    references: dict[str, Path], tmp_path: Path
) -> None:
    cand = tmp_path / "features_dp2"
    run(cand, 2, FEATURES)
    rc, report, text = diff(references["features"], cand, tmp_path)
    got = counts("features_dp2, MTP loss as shipped", report)
    assert rc == 1 and got["divergent"] > 0, text
    assert (got["invalid"], got["missing"]) == (0, 0), text
    first = report["first_divergence"]
    assert (first["iteration"], first["backward"], first["kind"]) == (
        0,
        "output_layer",
        "output_grad",
    ), first
    tensor = report["tensors"][first["tensor"]]
    factors = [d for d in tensor["diagnosis"] if d["kind"] == "slice_factors"]
    assert factors, tensor["diagnosis"]
    found = [float(part.split("x")[1]) for part in factors[0]["evidence"].split(", ")]
    # The evidence prints three significant digits.
    assert found == pytest.approx(mtp_rank_factors(2), abs=6e-3), (found, text)
