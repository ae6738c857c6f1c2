"""Nothing from the network or another rank is ever unpickled: the product's code holds no
pickle, no `broadcast_object_list`, and no `torch.load` without `weights_only=True`."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("python/ttrace", "core", "app", "ui")
SUFFIXES = {".py", ".cpp", ".h", ".hpp", ".cc"}
FORBIDDEN = [
    (re.compile(r"\bimport\s+pickle\b|\bfrom\s+pickle\b|\bpickle\.loads?\b|\bcPickle\b"), "pickle"),
    (re.compile(r"\bbroadcast_object_list\b"), "broadcast_object_list"),
]
TORCH_LOAD = re.compile(r"\btorch\.load\s*\(")


def _calls(text: str, match: re.Match[str]) -> str:
    """The text of the call starting at `match`, up to its closing parenthesis."""
    depth, i = 0, match.end() - 1
    for i in range(match.end() - 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            break
    return text[match.start() : i + 1]


def offenders() -> list[str]:
    found: list[str] = []
    for root in PRODUCT:
        for path in sorted((REPO / root).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            rel = path.relative_to(REPO)
            for pattern, what in FORBIDDEN:
                if pattern.search(text):
                    found.append(f"{rel}: {what}")
            for m in TORCH_LOAD.finditer(text):
                if not re.search(r"weights_only\s*=\s*True", _calls(text, m)):
                    found.append(f"{rel}: torch.load without weights_only=True")
    return found


def test_product_never_unpickles() -> None:
    assert offenders() == []


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    text = "x = torch.load(f)\ny = torch.load(g, weights_only=True)\nimport pickle\n"
    bad = [m for m in TORCH_LOAD.finditer(text) if "weights_only=True" not in _calls(text, m)]
    assert len(bad) == 1
    assert FORBIDDEN[0][0].search(text)
