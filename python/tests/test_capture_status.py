"""Status records in one process: a finished capture leaves none and replaces an old bundle;
a capture that never closed validates as incomplete; broken or mixed records are errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import torch
from cli_paths import ttrace_binary
from torch import nn

import ttrace.capture as ttc


def capture(out: Path, close: bool = True) -> ttc.Tracer:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    tracer = ttc.Tracer(model, None, out, role="reference", world_size=1)
    with tracer.step(0):
        model(torch.randn(3, 4)).sum().backward()
    if close:
        tracer.close()
    else:
        tracer.flush()
    return tracer


def validate(bundle: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ttrace_binary()), "validate", str(bundle)], capture_output=True, text=True
    )


def test_finished_capture_replaces_old_files_and_leaves_no_record(tmp_path: Path) -> None:
    out = tmp_path / "b"
    out.mkdir()
    (out / "rank-00003.h5").write_bytes(b"old")
    (out / "rank-00003.status.json").write_text("{}")
    capture(out)
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "rank-00000.h5"]
    assert validate(out).returncode == 0


def test_unclosed_capture_is_incomplete_not_unknown(tmp_path: Path) -> None:
    out = tmp_path / "b"
    tracer = capture(out, close=False)
    record = json.loads((out / "rank-00000.status.json").read_text())
    assert record["steps_done"] == [["nominal", 0]] and record["state"] == "capturing"
    proc = validate(out)
    assert proc.returncode == 2
    assert f"incomplete: rank 0 stopped after {record['last_tensor']}" in proc.stderr
    tracer.close()


def test_broken_and_mixed_records_are_named(tmp_path: Path) -> None:
    out = tmp_path / "b"
    tracer = capture(out, close=False)
    record = json.loads((out / "rank-00000.status.json").read_text())
    record.update(rank=1, world_size=2, capture_id="another")
    (out / "rank-00001.status.json").write_text(json.dumps(record))
    proc = validate(out)
    assert proc.returncode == 2 and "from another capture" in proc.stderr
    (out / "rank-00001.status.json").write_text("[1, 2")
    proc = validate(out)
    assert proc.returncode == 2 and "rank-00001.status.json: is not a JSON object" in proc.stderr
    tracer.close()
