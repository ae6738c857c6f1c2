"""The rank-file cache (what opening a rank file learns: its CRC-32 and libhdf5's facts) is
reused while a file is unchanged and never changes an answer: a reopen indexes nothing again and
writes the same JSON; damaged cache entries are ignored and recomputed; a rank file changed in
place (same size, modification time restored) is read again and reported as damaged, exactly as
without the cache."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
from cli_paths import ttrace_binary

from ttrace_testing import demo_bundles

# Entries are written only for files whose times are this far in the past (rank_file_cache.h).
RACY_SECONDS = 3.2


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pair")
    assert demo_bundles.main([str(out)]) == 0
    time.sleep(RACY_SECONDS)
    return out


def counting_indexer(tmp: Path) -> tuple[Path, Path]:
    """A helper that logs each run and then runs the real ttrace-index."""
    log = tmp / "indexer-runs.log"
    script = tmp / "ttrace-index"
    real = ttrace_binary("ttrace-index")
    script.write_text(f'#!/bin/sh\necho "$1" >> "{log}"\nexec "{real}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, log


def diff(pair: Path, out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [str(ttrace_binary()), "diff", "--no-cache", "--quiet", "--json", str(out)]
    cmd += [str(pair / "reference"), str(pair / "candidate")]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_reused_while_unchanged_and_never_trusted_otherwise(pair: Path, tmp_path: Path) -> None:
    helper, log = counting_indexer(tmp_path)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), TTRACE_INDEX_HELPER=str(helper))
    rank_files = sorted(pair.rglob("rank-*.h5"))

    first = diff(pair, tmp_path / "first.json", env)
    assert first.returncode == 0, first.stderr
    assert runs(log) == len(rank_files)
    entries = sorted((tmp_path / "cache" / "ttrace" / "rank-files").glob("*.bin"))
    assert len(entries) == 2 * len(rank_files)  # a CRC-32 and the facts per file

    again = diff(pair, tmp_path / "again.json", env)
    assert again.returncode == 0, again.stderr
    assert runs(log) == len(rank_files), "an unchanged file was indexed again"
    reference = (tmp_path / "first.json").read_bytes()
    assert (tmp_path / "again.json").read_bytes() == reference

    for entry in entries:  # damaged entries: ignored, recomputed, same answer
        data = bytearray(entry.read_bytes())
        data[len(data) // 2] ^= 0x40
        entry.write_bytes(bytes(data))
    damaged = diff(pair, tmp_path / "damaged.json", env)
    assert damaged.returncode == 0, damaged.stderr
    assert runs(log) == 2 * len(rank_files)
    assert (tmp_path / "damaged.json").read_bytes() == reference

    # A rank file changed in place, size kept and modification time restored: its stamp's
    # change time still differs, so it is read again and found damaged, as without the cache.
    victim = pair / "candidate" / "rank-00001.h5"
    before = victim.stat()
    data = bytearray(victim.read_bytes())
    data[-100] ^= 0xFF
    victim.write_bytes(bytes(data))
    os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))
    cached = diff(pair, tmp_path / "stale.json", env)
    uncached = diff(pair, tmp_path / "uncached.json", dict(env, TTRACE_NO_RANK_FILE_CACHE="1"))
    assert cached.returncode == uncached.returncode == 2, cached.stderr
    stale = (tmp_path / "stale.json").read_bytes()
    assert stale == (tmp_path / "uncached.json").read_bytes()
    assert b"damaged-file" in stale
