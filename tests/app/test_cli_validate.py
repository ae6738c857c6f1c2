"""`ttrace validate` on real bundles written by the Python writer: exit codes and messages."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cli_paths import ttrace_binary

from ttrace_testing import demo_bundles


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    demo_bundles.main([str(out)])
    return out


def run_validate(*bundles: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ttrace_binary()), "validate", *map(str, bundles)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_valid_bundles_exit_zero_with_summary(demo: Path) -> None:
    result = run_validate(demo / "reference", demo / "candidate")
    assert result.returncode == 0, result.stderr
    assert "ranks      4" in result.stdout
    assert "ranks      1" in result.stdout
    assert result.stdout.count("valid") == 2


def test_deleted_rank_file_names_the_rank(demo: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "candidate"
    shutil.copytree(demo / "candidate", bundle)
    (bundle / "rank-00002.h5").unlink()
    result = run_validate(bundle)
    assert result.returncode == 2
    assert "rank 2: rank-00002.h5 is missing" in result.stderr
    # Consequential holes are summarized, not listed by the hundred.
    assert len(result.stderr.splitlines()) < 20


def test_truncated_rank_file_is_reported(demo: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "candidate"
    shutil.copytree(demo / "candidate", bundle)
    victim = bundle / "rank-00001.h5"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    result = run_validate(bundle)
    assert result.returncode == 2
    assert "rank-00001.h5" in result.stderr
    assert "truncated" in result.stderr


def test_not_a_bundle_exits_two(tmp_path: Path) -> None:
    result = run_validate(tmp_path)
    assert result.returncode == 2
    assert "manifest.json" in result.stderr


def test_no_arguments_is_usage_error() -> None:
    result = subprocess.run([str(ttrace_binary()), "validate"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "usage" in result.stderr
