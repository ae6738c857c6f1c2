"""The scripts CI relies on fail when something fails: a failed build, a skipped test that no
one reviewed, a demo bug that its layout cannot show."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECK_SKIPS = REPO / "scripts" / "check_skips.py"

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="2" skipped="1">
<testcase classname="python.tests.test_a" name="test_ok" time="0.1"/>
<testcase classname="python.tests.test_a" name="test_tool" time="0.0">
<skipped type="pytest.skip" message="h5dump not installed">skip</skipped></testcase>
</testsuite></testsuites>
"""


def check_skips(results: Path, expected: str, *entries: str) -> subprocess.CompletedProcess:
    listing = results.parent / "expected.txt"
    listing.write_text(expected)
    cmd = [sys.executable, str(CHECK_SKIPS), str(results), str(listing), *entries]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_an_unreviewed_skip_fails(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "python_tests.xml").write_text(JUNIT)
    run = check_skips(results, "# nothing may skip\n", "python_tests")
    assert run.returncode == 1
    assert "unexpected skip of python/tests/test_a.py::test_tool: h5dump not installed" in (
        run.stderr
    )


def test_a_listed_skip_passes_and_a_reason_is_required(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "python_tests.xml").write_text(JUNIT)
    listed = check_skips(results, "python/tests/test_a.py::test_tool  # no h5dump here\n")
    assert listed.returncode == 0, listed.stderr
    assert "1 skipped tests, 0 unexpected" in listed.stdout
    bare = check_skips(results, "python/tests/test_a.py::test_tool\n")
    assert bare.returncode != 0 and "has no reason" in bare.stderr


def test_an_entry_without_a_report_did_not_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    run = check_skips(results, "", "python_megatron")
    assert run.returncode == 1
    assert "entry python_megatron: no JUnit report" in run.stderr


def test_the_reviewed_list_is_what_ci_reads() -> None:
    listing = REPO / "tests" / "expected-skips.txt"
    assert "expected-skips.txt" in (REPO / "scripts" / "test.sh").read_text()
    for line in listing.read_text().splitlines():
        if line.split("#", 1)[0].strip():
            assert "#" in line, f"{line!r} has no reason"


def test_a_failed_build_fails_setup(tmp_path: Path) -> None:
    """build_quietly returns the build's own status even though its output is filtered: a
    failing `cmake --build` stops the README's commands."""
    fake = tmp_path / "bin"
    fake.mkdir()
    cmake = fake / "cmake"
    cmake.write_text("#!/bin/sh\necho '[1/2] Building x'\necho 'error: it broke' >&2\nexit 3\n")
    cmake.chmod(0o755)
    script = f'source "{REPO}/scripts/setup.sh"; TTRACE_ROOT="{tmp_path}"; build_quietly b --'
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
    assert run.returncode == 3, run.stderr
    assert "error: it broke" in run.stderr and "[1/2]" not in run.stderr
    assert "build failed" in run.stderr


@pytest.mark.parametrize(
    ("bug", "flags", "status"),
    [
        ("sp-norm-grad-not-reduced", ["--tp", "2", "--dp", "2"], 0),
        ("rope-cp-offset", ["--tp", "2", "--dp", "2"], 2),
        ("tied-embedding-not-synced", ["--pp", "2"], 2),
        ("tied-embedding-not-synced", ["--pp", "2", "--tie-embeddings"], 0),
        ("no-such-bug", ["--tp", "2"], 2),
    ],
)
def test_demo_bugs_need_their_layout(bug: str, flags: list[str], status: int) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "python"), str(REPO)]))
    cmd = [sys.executable, "-m", "examples.gpt.bugs", bug, *flags]
    run = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == status, run.stderr
    if bug == "rope-cp-offset":
        assert "needs --cp 2" in run.stderr and "sp-norm-grad-not-reduced" in run.stderr


def test_every_zoo_bug_runs_in_its_zoo_layout() -> None:
    from examples.gpt import bugs
    from examples.gpt.train import parse_args
    from ttrace_testing.bug_specs import SPECS
    from ttrace_testing.zoo_lib import CONFIGS, SMALL

    for spec in SPECS:
        cfg = CONFIGS[spec.config]
        extra = ["--precision", "fp8"] if spec.bug == "fp8-amax-not-reduced" else []
        args = parse_args(["--out", "x", *SMALL, *cfg.cand, *cfg.shared, *extra])
        assert bugs.unmet(spec.bug, args) == [], spec


CHECK_FIGURES = REPO / "scripts" / "check_doc_figures.py"


def check_figures(root: Path, doc: str) -> subprocess.CompletedProcess:
    (root / "docs").mkdir(parents=True, exist_ok=True)
    (root / "bench").mkdir(exist_ok=True)
    (root / "bench" / "speed.py").write_text('parser.add_argument("--sizes")\n')
    (root / "README.md").write_text("# r\n")
    (root / "docs" / "perf.md").write_text(doc)
    cmd = [sys.executable, str(CHECK_FIGURES), str(root)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


TABLE = "| run | time |\n|---|---|\n| diff | 2.33 s |\n"


def test_a_figure_without_its_command_fails(tmp_path: Path) -> None:
    run = check_figures(tmp_path, "# Perf\n\n## Measured\n\n" + TABLE)
    assert run.returncode == 1
    assert "docs/perf.md:7: a table of measurements with no command" in run.stdout


def test_a_missing_script_or_option_fails(tmp_path: Path) -> None:
    run = check_figures(tmp_path, "`bench/gone.py`\n\n`bench/speed.py --rounds 3`\n" + TABLE)
    assert run.returncode == 1
    assert "docs/perf.md:1: bench/gone.py does not exist" in run.stdout
    assert "docs/perf.md:3: bench/speed.py has no option --rounds" in run.stdout


def test_a_figure_under_its_command_passes(tmp_path: Path) -> None:
    doc = "# Perf\n\n`bench/speed.py --sizes small`\n\n## Measured\n\n" + TABLE
    assert check_figures(tmp_path, doc).returncode == 0
    limits = "# Limits\n\n<!-- not measured: enforced limits -->\n" + TABLE
    assert check_figures(tmp_path, limits).returncode == 0


def test_every_documented_figure_names_its_command() -> None:
    run = subprocess.run(
        [sys.executable, str(CHECK_FIGURES), str(REPO)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout


def test_building_by_hand_lists_every_package_setup_installs() -> None:
    """README's "Building by hand" names every Debian package scripts/setup.sh installs, so
    a build by hand from that list has what the Quickstart's build has."""
    setup = (REPO / "scripts" / "setup.sh").read_text()
    block = setup.split("APT_PACKAGES=(", 1)[1].split("\n)", 1)[0]
    packages = {w for line in block.splitlines() for w in line.split("#")[0].split()}
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Building by hand", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"[a-z0-9][a-z0-9.+-]+", section))
    assert packages - named == set(), sorted(packages - named)
