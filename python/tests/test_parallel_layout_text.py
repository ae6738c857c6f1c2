"""The agent words a layout exactly as the core does: both are held to one case table, which
the core's test_verdict_text checks `parallelLayoutText` against, and the `ttrace serve` and
layout-refusal lines use these words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ttrace.agent.relaunch_layout import LayoutError, RelaunchLayout, relaunch_layout
from ttrace.bundle.layout_text import parallel_layout_text

CASES = Path(__file__).resolve().parents[2] / "tests" / "common" / "parallel_layout_cases.json"


def _cases() -> list[dict]:
    return json.loads(CASES.read_text())["cases"]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["text"])
def test_same_words_as_the_core(case: dict) -> None:
    assert parallel_layout_text(case["parallel"], case["world_size"]) == case["text"]


def test_refused_relaunch_names_both_layouts_in_the_core_words() -> None:
    ranks = [{"rank": r, "coords": {"tp": r % 2, "dp": r // 2}} for r in range(4)]
    manifest = {"parallel": {"tp": 2, "dp": 2}, "world_size": 4, "ranks": ranks}
    with pytest.raises(LayoutError) as refused:
        relaunch_layout(manifest, 0, 2, {"tp": 1, "dp": 2}, {"tp": 0, "dp": 0})
    text = str(refused.value)
    assert "the candidate bundle is TP2 x DP2, 4 ranks, this relaunch DP2, 2 ranks" in text
    assert "\u00d7" not in text


def test_data_parallel_shortfall_names_the_layouts_as_ttrace_localize_does() -> None:
    """The phrase `ttrace localize`'s layout line prints (core's relaunchLayoutLine)."""
    layout = RelaunchLayout({"tp": 2, "dp": 2}, {"tp": 2, "dp": 1}, 4, 2, (0, 2), (0, 1))
    assert "relaunched TP2, 2 ranks, of the captured TP2 x DP2, 4 ranks" in (
        layout.dp_shortfall() or ""
    )
