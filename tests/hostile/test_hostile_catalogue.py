"""Every hostile case of make_catalogue.py through `ttrace validate`, `ttrace diff` and the
explorer's headless `--screenshot`: each must answer with the expected exit status, the typed
diagnostic code (in `ttrace diff --json`) and a message naming the file, rank or tensor; none
may crash or hang."""

from __future__ import annotations

import os
from pathlib import Path

import make_catalogue  # beside this file: pytest puts its folder on the path
import pytest
import run_catalogue

HERE = Path(__file__).resolve().parent

BIN_DIR = Path(os.environ.get("TTRACE_BIN_DIR", HERE.parents[1] / "build" / "bin"))
# The sanitized build has no explorer: its CTest entry asks for `validate,diff` only.
TOOLS = tuple(os.environ.get("TTRACE_HOSTILE_TOOLS", ",".join(run_catalogue.TOOLS)).split(","))
CASES = [c.name for c, _ in make_catalogue.CASES]


Answers = dict[str, dict[str, run_catalogue.Answer]]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wanted = {"validate": "ttrace", "diff": "ttrace", "explorer": "ttrace-explorer"}
    missing = sorted({wanted[t] for t in TOOLS if not (BIN_DIR / wanted[t]).exists()})
    # A missing binary is a failed build, never a skip.
    assert not missing, f"{', '.join(missing)} not built in {BIN_DIR}"
    where = tmp_path_factory.mktemp("hostile")
    make_catalogue.build(where)
    return where


@pytest.fixture(scope="module")
def answers(root: Path) -> Answers:
    return run_catalogue.run_all(root, BIN_DIR, workers=4, tools=TOOLS)


@pytest.mark.parametrize("name", CASES)
def test_case_answers_alike(name: str, answers: dict[str, dict[str, run_catalogue.Answer]]) -> None:
    case = next(c for c, _ in make_catalogue.CASES if c.name == name)
    spec = {"name": name, "expect": {**case.expect.__dict__}}
    wrong = run_catalogue.problems(spec, answers[name])
    detail = "\n".join(
        f"--- {tool} (exit {a.exit}):\n{a.stderr[-800:]}{a.stdout[-400:]}"
        for tool, a in answers[name].items()
    )
    assert not wrong, f"{case.what}: " + "; ".join(wrong) + "\n" + detail


@pytest.mark.parametrize("name", CASES)
def test_case_memory_bounded(name: str, root: Path, answers: Answers) -> None:
    """Peak memory (the tool and the indexer it runs) grows by at most twice the bundle's size
    plus a fixed allowance over the same tool on the untouched pair."""
    case = next(c for c in run_catalogue.load_cases(root) if c["name"] == name)
    wrong = run_catalogue.memory_problems(root, case, answers[name], answers["_base"])
    assert not wrong, "; ".join(wrong)


def test_catalogue_covers_the_issue() -> None:
    assert len(CASES) >= 45
