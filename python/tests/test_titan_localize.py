"""`ttrace localize` on torchtitan's own Llama 3 (0.3.0 from its package, Python 3.12,
`titan_pkg/llama3_train.py` as in `test_titan_package.py`), TP2 on the `partial_dtensor`
backend with its FSDP wrapping: the candidate job exits after capture and `ttrace serve`
relaunches it from its bundles. Parameters are DTensors (FSDP2 shards over a 1-rank data
mesh, tensor-parallel pieces), activations pass between modules as DTensors (sequence
parallel inputs, replicated outputs, partial-sum output gradients), so every replay feeds
DTensors as the job held them.

The injected bug scales tensor-parallel rank 1's partial sum in `layers.0.feed_forward.w2`'s
output reduction: the walk names that module; the modules around it, forward and backward,
fed the reference's values, inherit (before, the relaunch had no record of a DTensor buffer
and every replay failed on DTensor arguments and parameters).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from job_runner import run_module
from serve_job import RelaunchJob
from serving_candidate import localize

pytest.importorskip("torchtitan")

MODULE = "tests.titan_pkg.llama3_train"
GUILTY = "layers.0.feed_forward.w2"
AROUND = ("layers.1", "layers.1.attention", "norm", "lm_head", "tok_embeddings")


def verdicts(report: dict) -> dict[tuple[str, str], str]:
    return {(v["module"], v["phase"]): v["verdict"] for v in report["verdicts"]}


def test_tensor_parallel_bug_is_localized_from_the_bundles(tmp_path: Path) -> None:
    reference, candidate = tmp_path / "reference", tmp_path / "candidate"
    run_module(MODULE, ["--out", str(reference), "--tp", "1", "--bug", "none"], 1, 600)
    run_module(MODULE, ["--out", str(candidate), "--tp", "2", "--bug", "tp"], 2, 600)
    relaunch = RelaunchJob(tmp_path / "serve", reference, candidate)
    try:
        endpoint, _, _ = relaunch.wait_serving()
        token = relaunch.token_file
        rc, walk, text = localize(reference, candidate, endpoint, token, tmp_path / "walk.json")
        assert rc == 1 and walk["guilty"] == [GUILTY], text
        assert verdicts(walk)[(GUILTY, "forward")] == "introduced", text
        modules = [arg for m in AROUND for arg in ("--module", m)]
        for phase in ("forward", "backward"):
            out = tmp_path / f"{phase}.json"
            rc, report, text = localize(
                reference, candidate, endpoint, token, out, *modules, "--phase", phase
            )
            found = verdicts(report)
            assert all(found[(m, phase)] == "inherited" for m in AROUND), text
            assert rc == 0, text
        rc, report, text = localize(
            reference, candidate, endpoint, token, tmp_path / "guilty.json",
            *("--module", GUILTY, "--phase", "forward", "--shutdown"),
        )  # fmt: skip
        assert rc == 1 and verdicts(report)[(GUILTY, "forward")] == "introduced", text
        assert relaunch.proc.wait(timeout=120) == 0, relaunch.output()
    finally:
        relaunch.kill()
