#!/usr/bin/env python3
"""Fails when a measured figure in the docs has no command that reproduces it.

Usage: check_doc_figures.py ROOT

Two rules, over README.md and docs/*.md:
1. Every command the docs name (`bench/x.py --flag`, `scripts/y.sh`, `python/tests/z.py`)
   exists, and every `--flag` written after it on the same line is one that script defines.
2. Every table of measurements (a row holding a number with a unit: s, ms, MB, MiB, GB,
   GB/s, MB/s or a ratio such as 2.5x) sits in a section, or under a parent heading, that
   names such a command: a figure nobody can reproduce is not a figure. A table of limits or
   settings, not measurements, says so with `<!-- not measured: REASON -->` in its section.
Prints each problem as FILE:LINE: what, and exits 1 if there is any.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# A command the docs may name: a script of the repository, by its path from the root.
COMMAND = re.compile(
    r"(?<![\w/.])((?:bench|scripts|python/tests|tests|examples)/[\w/.-]+\.(?:py|sh|cpp))"
    r"((?:[ \t]+[^\s`|]+)*)"
)
FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")
# A measured cell: a number followed by a unit of time, size, rate or a ratio.
MEASURED = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|MB|MiB|GB|GiB|GB/s|MB/s|x)(?=[\s,|)])")
HEADING = re.compile(r"^(#{1,6})\s")
NOT_MEASURED = re.compile(r"<!-- not measured: \S.*-->")


@dataclass
class Section:
    level: int
    line: int
    commands: list[str] = field(default_factory=list)
    table_lines: list[int] = field(default_factory=list)
    not_measured: bool = False


def sections(lines: list[str]) -> list[Section]:
    found = [Section(0, 1)]
    for number, text in enumerate(lines, start=1):
        heading = HEADING.match(text)
        if heading:
            found.append(Section(len(heading.group(1)), number))
            continue
        found[-1].commands += [m.group(1) for m in COMMAND.finditer(text)]
        found[-1].not_measured |= bool(NOT_MEASURED.search(text))
        if text.lstrip().startswith("|") and MEASURED.search(text):
            found[-1].table_lines.append(number)
    return found


def reproducible(index: int, found: list[Section]) -> bool:
    """The section, or a heading above it, names a command."""
    level = found[index].level + 1
    for section in reversed(found[: index + 1]):
        if section.level < level:
            if section.commands:
                return True
            level = section.level
    return False


def command_problems(doc: Path, lines: list[str], root: Path) -> list[str]:
    problems = []
    for number, text in enumerate(lines, start=1):
        for match in COMMAND.finditer(text):
            script = root / match.group(1)
            where = f"{doc.relative_to(root)}:{number}"
            if not script.is_file():
                problems.append(f"{where}: {match.group(1)} does not exist")
                continue
            source = script.read_text(encoding="utf-8", errors="replace")
            for flag in FLAG.findall(match.group(2)):
                if flag not in source:
                    problems.append(f"{where}: {match.group(1)} has no option {flag}")
    return problems


def check(root: Path) -> list[str]:
    problems = []
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        lines = doc.read_text(encoding="utf-8").splitlines()
        problems += command_problems(doc, lines, root)
        found = sections(lines)
        for index, section in enumerate(found):
            if section.not_measured or not section.table_lines:
                continue
            if not reproducible(index, found):
                problems.append(
                    f"{doc.relative_to(root)}:{section.table_lines[0]}: a table of measurements "
                    "with no command that reproduces it in its section or above"
                )
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1]
    problems = check(root)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
