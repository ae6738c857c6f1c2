"""Bundles damaged at random byte offsets (bad copies from a cluster): `ttrace validate` and
`ttrace diff` must answer with a verdict or a clear error, never a crash or a hang."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_paths import ttrace_binary

from ttrace_testing import demo_bundles

SEEDS = range(24)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    demo_bundles.main([str(out)])
    return out


def corrupt_copy(source: Path, target: Path, seed: int) -> str:
    """Copies the bundle and overwrites a few bytes of one rank file; returns what was hit."""
    shutil.copytree(source, target)
    rng = random.Random(seed)
    victim = target / f"rank-{rng.randrange(4):05d}.h5"
    data = bytearray(victim.read_bytes())
    # Half the seeds hit the first 4 KiB (superblock, root group, attributes), the rest anywhere.
    span = 4096 if seed % 2 == 0 else len(data)
    for _ in range(8):
        data[rng.randrange(span)] = rng.randrange(256)
    victim.write_bytes(bytes(data))
    return victim.name


@pytest.mark.parametrize("seed", SEEDS)
def test_random_corruption_never_crashes(demo: Path, tmp_path: Path, seed: int) -> None:
    cand = tmp_path / "candidate"
    victim = corrupt_copy(demo / "candidate", cand, seed)
    for args in (
        ["validate", str(cand)],
        ["diff", "--no-cache", str(demo / "reference"), str(cand)],
    ):
        result = subprocess.run(
            [str(ttrace_binary()), *args], capture_output=True, text=True, timeout=60
        )
        # Negative return codes are signals (a crash); 0/1/2 are verdicts and clear errors.
        assert result.returncode in (0, 1, 2), (
            f"{args[0]} on {victim} (seed {seed}) ended with {result.returncode}:\n"
            f"{result.stderr[-2000:]}"
        )
        if result.returncode == 2:
            assert "error" in result.stderr, result.stderr[-2000:]
