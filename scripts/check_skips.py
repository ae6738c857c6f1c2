#!/usr/bin/env python3
"""Fails when a pytest entry skipped a test that tests/expected-skips.txt does not list.

Every pytest CTest entry writes a JUnit report (tests/CMakeLists.txt, `ttrace_pytest`). A skip
hides a missing binary or dependency as well as a test that cannot apply here, so each skip
must be reviewed: the list holds `<test id pattern>  # reason` lines (fnmatch patterns on
`file::test`). An entry that wrote no report at all is an error too: it did not run.

Usage: check_skips.py RESULTS_DIR EXPECTED_FILE [ENTRY...]
"""

from __future__ import annotations

import fnmatch
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def expected_patterns(path: Path) -> list[str]:
    patterns = []
    for line in path.read_text().splitlines():
        pattern = line.split("#", 1)[0].strip()
        if pattern:
            if "#" not in line:
                sys.exit(f"{path}: '{pattern}' has no reason (write '# why it may skip')")
            patterns.append(pattern)
    return patterns


def skipped_tests(report: Path) -> list[tuple[str, str]]:
    """(file::test, skip message) of every skipped case in one JUnit report."""
    out = []
    for case in ET.parse(report).getroot().iter("testcase"):
        skip = case.find("skipped")
        if skip is None:
            continue
        path = case.get("classname", "").replace(".", "/")
        out.append((f"{path}.py::{case.get('name', '')}", skip.get("message", "")))
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    results, expected = Path(argv[1]), expected_patterns(Path(argv[2]))
    reports = sorted(results.glob("*.xml"))
    problems = [
        f"entry {name}: no JUnit report, it did not run"
        for name in argv[3:]
        if not (results / f"{name}.xml").is_file()
    ]
    count = 0
    for report in reports:
        for test, why in skipped_tests(report):
            count += 1
            if not any(fnmatch.fnmatch(test, p) for p in expected):
                problems.append(f"{report.stem}: unexpected skip of {test}: {why}")
    for problem in problems:
        print(f"check_skips: {problem}", file=sys.stderr)
    print(f"check_skips: {len(reports)} reports, {count} skipped tests, {len(problems)} unexpected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
