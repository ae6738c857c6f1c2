"""Real Megatron-core, its newest release (0.19.2) as shipped, on Python 3.12 (its own
environment, `.venv312`, ctest entry `python_megatron_latest`), captured with zero
annotations: the tiny `GPTModel` of `megatron/gpt_train.py` (local layer spec, Megatron's
DDP, `get_megatron_optimizer`, the no-pipelining schedule) on gloo against a single-process
reference.

Correct runs must be clean: TP2, DP2, TP2 + sequence parallelism, TP2 x DP2 with the
distributed optimizer, and TP2 with the release's newer features together: a learnable softmax
offset (an attention sink) marked tensor-parallel as its heads are (the upstream fix of the
release's unmarked offset), a multi-token-prediction layer, a loss over the global token count
(Megatron's `calculate_per_token_loss`) and rows padded to different lengths; and MoE (4
experts, top-2) on TP2 + sequence parallelism with a load-balancing loss (coefficient 1e-2)
under the per-token loss and a padding mask, with the upstream fix of the router's token count
(`model_options.fix_router_token_count`; the padding is balanced over the two sequence-parallel
halves, which the release's per-token scaling of that loss assumes).

A silent bug of the release as shipped, unpatched: `process_mtp_loss` scales the MTP loss
under `calculate_per_token_loss` by the rank's own token counts (its count before the roll
over its count after it) instead of the global ones; with data-parallel ranks holding
different token counts the MTP gradients of each rank are off by its own factor. The diff must
exit 1 with nothing invalid or missing, the first backward divergence at the gradient the MTP
loss hands to the output layer, each rank's slice scaled by the factor its counts give.

Two more, TP2: the attention sink's `softmax_offset` split by heads over tp but not marked
tensor-parallel, so gradient clipping counts only tp rank 0's part in the global norm. The
candidate initializes it by the reference's shape (`seeded_init(reference=...)`); the diff
must exit 1 with nothing invalid, missing or unresolved, everything up to the main gradients
clean (the offset and its gradient, passed to the softmax as an argument, resolved as split),
and the first divergence at the optimizer step (the clip coefficient, from the undercounted
norm). And the MoE router's per-expert token count overwritten by the in-place all-reduce
over tp: the local token count of the per-token scaling of the load-balancing loss is then
the group's, its gradient tp times too large; the diff must exit 1 with the first backward
divergence at the router, introduced there.

CPU shims (`megatron/cpu_stubs.py`), device calls only: `torch.cuda.current_device()` is the CPU; a
literal `device="cuda"` in tensor factories becomes the CPU; `Tensor.type()` answers the CUDA type
name; `torch.cuda.current_stream()` is a stream with nothing to wait for (0.19 waits on CUDA-graph
events before its gradient reduction); Megatron's calls of the CUDA generator are answered by the
CPU generator the ops draw from (its RNG tracker runs as shipped); Apex's fused layer-norm kernel
is `F.layer_norm`. None replaces a reduction or a placement.
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
# MoE with the load-balancing loss under the per-token loss and a padding mask.
MOE = ("--moe", "--aux-loss", "1e-2", "--per-token-loss", "--balanced-padding")


@dataclass(frozen=True)
class Config:
    nproc: int
    args: tuple[str, ...]
    reference: str = "plain"


REFERENCES = {"plain": (), "features": FEATURES, "moe": MOE}
CONFIGS = {
    "tp2": Config(2, ("--tp", "2")),
    "dp2": Config(2, ()),
    "tp2_sp": Config(2, ("--tp", "2", "--sp")),
    "tp2_dp2": Config(4, ("--tp", "2", "--dist-optimizer")),
    "features_tp2": Config(2, ("--tp", "2", *FEATURES), "features"),
    "moe_tp2_sp": Config(2, ("--tp", "2", "--sp", *MOE, "--fix-router-count"), "moe"),
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
    picked = {k: s[k] for k in ("compared", "divergent", "invalid", "missing", "unresolved")}
    first = {k: v for k, v in report["first_divergence"].items() if k != "also_in_phase"}
    print(f"\n{name}: {picked} exit {s['exit_code']} first divergence {first}")
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


def test_unmarked_softmax_offset_is_found(references: dict[str, Path], tmp_path: Path) -> None:
    cand = tmp_path / "sink_tp2"
    shipped = tuple(a for a in FEATURES if a != "--mark-softmax-offset")
    run(cand, 2, ("--tp", "2", *shipped, "--reference", str(references["features"])))
    rc, report, text = diff(references["features"], cand, tmp_path)
    got = counts("sink_tp2, softmax offset as shipped", report)
    assert rc == 1 and got["divergent"] > 0, text
    assert (got["invalid"], got["missing"], got["unresolved"]) == (0, 0, 0), text
    first = report["first_divergence"]
    assert (first["iteration"], first["phase"]) == (0, "optimizer_step"), first
    assert (first["forward"], first["backward"]) == (None, None), first
    # The gradients are right, the offset's included: the clip norm taken from them is not.
    kinds = {t["id"]["kind"] for t in report["tensors"] if t["status"] != "clean"}
    assert not kinds & {"forward_output", "input_grad", "param_grad", "main_grad"}, kinds
    # The offset as a parameter, and as the softmax's argument 2 (forward and gradient).
    softmax = "core_attention.scale_mask_softmax"
    offsets = [
        t
        for t in report["tensors"]
        if t["id"]["index"] == "softmax_offset"
        or (t["id"]["index"] == "2" and t["id"]["module"].endswith(softmax))
    ]
    assert offsets and all(t["status"] == "clean" for t in offsets), text
    chosen = {(t["placement_resolution"] or {}).get("chosen") for t in offsets}
    assert "split dim 0 over tp (undeclared)" in chosen, chosen


def test_router_token_count_overwritten_is_found(
    references: dict[str, Path], tmp_path: Path
) -> None:
    cand = tmp_path / "moe_tp2_sp"
    run(cand, 2, ("--tp", "2", "--sp", *MOE))
    rc, report, text = diff(references["moe"], cand, tmp_path)
    got = counts("moe_tp2_sp, router token count as shipped", report)
    assert rc == 1 and got["divergent"] > 0, text
    assert (got["invalid"], got["missing"], got["unresolved"]) == (0, 0, 0), text
    first = report["first_divergence"]
    router = "decoder.layers.1.mlp.router"
    assert (first["iteration"], first["phase"], first["backward"]) == (0, "backward", router)
    origin = {m["name"]: m["origin"] for m in report["modules"]}
    assert origin[router] == "introduced", origin
