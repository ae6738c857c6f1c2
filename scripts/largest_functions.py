#!/usr/bin/env python3
"""The longest functions of the product code, for keeping them short (the project's bar is
about 60 lines): Python from its syntax tree, C++ by matching the braces of definitions at
namespace level (clang-format puts a definition's signature and closing brace at column 0;
members defined inside a class body are not counted, they are one-liners here).

    scripts/largest_functions.py [--top N] [PATH ...]   (default: core app ui python/ttrace)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

DEFAULT_ROOTS = ("core", "app", "ui", "python/ttrace")
CPP_SUFFIXES = {".cpp", ".cc", ".h", ".hpp"}
# Lines at column 0 that open a scope, not a function body.
NOT_A_FUNCTION = re.compile(
    r"^(namespace|struct|class|enum|union|extern|template\s*<[^>]*>\s*(struct|class))\b"
)
STRINGS = re.compile(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'')


def python_functions(path: Path) -> Iterator[tuple[int, str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node.end_lineno - start + 1, node.name, start


def _code(line: str) -> str:
    """The line without string literals and // comments (their braces are not code)."""
    return STRINGS.sub('""', line).split("//", 1)[0]


def cpp_functions(path: Path) -> Iterator[tuple[int, str, int]]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    signature: int | None = None  # the line a definition at namespace level starts on
    depth, start, in_comment = 0, 0, False
    for number, raw in enumerate(lines, 1):
        line = _code(raw)
        if in_comment or line.lstrip().startswith("/*"):
            in_comment = "*/" not in line
            continue
        if depth == 0:
            starts = raw[:1].isalpha() or raw.startswith(("~", "[["))
            if starts and signature is None and not NOT_A_FUNCTION.match(raw):
                signature = number
            if NOT_A_FUNCTION.match(raw) or line.rstrip().endswith(";"):
                signature = None
                continue
        opened, closed = line.count("{"), line.count("}")
        if depth == 0 and opened > closed and signature is not None:
            start = signature
        depth += opened - closed
        if depth <= 0:
            if start and opened + closed and "(" in lines[start - 1]:  # not a table
                name = lines[start - 1].split("(", 1)[0].split()[-1:] or ["?"]
                yield number - start + 1, name[0], start
            depth, start = 0, 0
            if opened + closed or raw.strip() == "":
                signature = None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=list(DEFAULT_ROOTS))
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    found = []
    for root in map(Path, args.paths):
        for path in sorted(root.rglob("*") if root.is_dir() else [root]):
            if path.suffix == ".py":
                found += [(n, f"{path}:{line}", name) for n, name, line in python_functions(path)]
            elif path.suffix in CPP_SUFFIXES:
                found += [(n, f"{path}:{line}", name) for n, name, line in cpp_functions(path)]
    for lines, where, name in sorted(found, reverse=True)[: args.top]:
        print(f"{lines:5d}  {name}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
