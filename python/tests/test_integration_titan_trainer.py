"""torchtitan 0.3.0's own `Trainer` (`titan_pkg/trainer_run.py`: its `train()`, gradient
accumulation over 2 micro-batches, loss, `clip_grad_norm_`, optimizer container and LR
scheduler on the package's `llama3_debugmodel_ce_loss` config cut to 2 layers) captured by
`ttrace.integrations.torchtitan.trace` (two lines), on Python 3.12 (`.venv312`, ctest entry
`python_integration_titan`). The reference's 2 variants by relaunch (`ttrace capture
--reference --perturbations 2`), the candidates under torchrun on 2 gloo ranks, compared by
the real `ttrace diff`: FSDP2 (`dp_shard` 2) and TP2 (with sequence parallel) clean; an FSDP2
gradient reduction bug and a TP2 row-parallel reduction bug (`titan_pkg/bugs.py`) caught in
their modules.

CPU shims (`titan_pkg/cpu_shims.py`), device choices only: the device type and module
torchtitan picks ("cuda" when no accelerator is found) and the barrier's device index; gloo
initialized before the Trainer (which would pick NCCL); a memory monitor that reports no
CUDA memory; torchtitan's causal SDPA inner attention instead of FlexAttention (no backward on
CPU); FSDP2's own sum-then-divide reduce-scatter (gloo has no PREMUL_SUM). And a version gap
(any device): torch 2.13.0 has no `torch.distributed.set_timeout`, which `train()` calls after
the first step; `_set_pg_timeout` stands in. Not run on CPU: FlexAttention and varlen
attention, CUDA graphs, torch.compile, float8, the `spmd_types` backend.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest
from job_runner import PYTHON_DIR, diff
from launch_runner import capture

MODULE = "tests.titan_pkg.trainer_run"
SCRIPT = PYTHON_DIR / "tests" / "titan_pkg" / "trainer_run.py"


@dataclass(frozen=True)
class Candidate:
    tp: int
    bug: str


CLEAN = {"fsdp2_dp2": Candidate(1, "none"), "tp2": Candidate(2, "none")}
BUGS = {
    # candidate, phase of the first divergence, the guilty module's name (or its prefix)
    "fsdp_block0_averaged": (Candidate(1, "fsdp"), "gradient_reduction", "layers.0."),
    "tp_row_parallel_reduction": (
        Candidate(2, "tp"),
        "forward",
        "layers.0._checkpoint_wrapped_module.feed_forward.w2",
    ),
}


def run_candidate(out: Path, candidate: Candidate) -> None:
    args = ["--out", str(out), "--tp", str(candidate.tp), "--bug", candidate.bug]
    capture(MODULE, ["--candidate"], out, 2, args)


def test_the_packages_are_the_releases() -> None:
    assert version("torchtitan") == "0.3.0"
    assert version("torchdata") == "0.11.0"


def test_the_script_needs_two_lines() -> None:
    text = SCRIPT.read_text()
    marked = [line for line in text.splitlines() if line.rstrip().endswith("# ttrace")]
    assert len(marked) == 2, marked  # the import, `trace(trainer, out)`
    assert "annotate" not in text and "ParallelInfo" not in text


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("titan-trainer") / "ref"
    capture(MODULE, ["--reference", "--perturbations", "2"], out, 1, ["--out", str(out)])
    return out


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_correct_run_is_clean(name: str, reference: Path, tmp_path: Path) -> None:
    cand = tmp_path / name
    run_candidate(cand, CLEAN[name])
    code, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    counts = (code, s["divergent"], s["invalid"], s["missing"], s["unresolved"])
    assert counts == (0, 0, 0, 0, 0), text
    assert s["compared"] > 1000, text
    clean = [t["id"] for t in report["tensors"] if t["status"] == "clean"]
    # torchtitan's step numbers (from 1), both micro-batches of the accumulation.
    assert {i["iteration"] for i in clean} == {1, 2}
    assert {i["micro_batch"] for i in clean if i["kind"] == "forward_output"} == {0, 1}
    kinds = {i["kind"] for i in clean}
    assert {"forward_output", "param_grad", "main_grad", "optimizer_state"} <= kinds, kinds


@pytest.mark.parametrize("name", sorted(BUGS))
def test_injected_bug_is_found_in_its_module(name: str, reference: Path, tmp_path: Path) -> None:
    candidate, phase, guilty = BUGS[name]
    cand = tmp_path / name
    run_candidate(cand, candidate)
    code, report, text = diff(reference, cand, tmp_path)
    s = report["summary"]
    assert (code, s["invalid"], s["missing"], s["unresolved"]) == (1, 0, 0, 0), text
    first = report["first_divergence"]
    assert first["phase"] == phase and first["module"].startswith(guilty), text
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    # The guilty module (or its blocks) first, or one of its parents, which hold it.
    holds = [m for m in introduced if m.startswith(guilty) or guilty.startswith(m + ".")]
    assert introduced and introduced[0] in holds, text


def test_a_loader_that_splits_documents_by_rank_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torchtitan's Hugging Face text loader on a local dataset: with 2 data-parallel ranks
    each reads its own slice of the documents (no one-process reference reads that global
    batch): refused, naming why; with one it is taken."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from torchtitan.components.tokenizer import HuggingFaceTokenizer
    from torchtitan.hf_datasets.text_datasets import HuggingFaceTextDataLoader

    from ttrace.integrations.batch_rows import SamplerError
    from ttrace.integrations.torchtitan import check_data_order

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    words = {f"w{i}": i for i in range(16)}
    Tokenizer(WordLevel(words, unk_token="w0")).save(str(tmp_path / "tokenizer.json"))
    docs = tmp_path / "docs"
    docs.mkdir()
    lines = [json.dumps({"text": f"w{i} w{i + 1} w{i + 2}"}) for i in range(8)]
    (docs / "train.json").write_text("\n".join(lines))
    tokenizer = HuggingFaceTokenizer(tokenizer_path=str(tmp_path))
    config = HuggingFaceTextDataLoader.Config(dataset="c4_test", dataset_path=str(docs))
    for dp in (2, 1):
        loader = config.build(
            dp_world_size=dp, dp_rank=0, tokenizer=tokenizer, seq_len=4, local_batch_size=1
        )
        if dp == 1:
            check_data_order(loader)
            continue
        with pytest.raises(SamplerError, match="split_dataset_by_node") as refused:
            check_data_order(loader)
        assert refused.value.code == "split_by_rank"
