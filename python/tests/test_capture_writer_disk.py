"""The capture's writer on a real disk: what it writes is what was captured, bit for bit,
through both write paths (H5Dwrite for small tensors, os.pwrite for the rest), and a write
the kernel refuses on the direct path stops the capture with the file and tensor named."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import torch

from ttrace.bundle import BundleWriter, TensorKey
from ttrace.bundle.attribute_writer import DIRECT_WRITE_BYTES
from ttrace.bundle.checksum import file_checksum
from ttrace.capture.async_writer import AsyncWriter
from ttrace.capture.host_buffers import HostBuffers

DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.float64)


def captured() -> dict[str, torch.Tensor]:
    """Tensors on both sides of the direct-write threshold, in several dtypes."""
    g = torch.Generator().manual_seed(3)
    out: dict[str, torch.Tensor] = {}
    for i, numel in enumerate((7, 1000, DIRECT_WRITE_BYTES // 4, 300_000, 1_000_003)):
        for dtype in DTYPES:
            values = torch.randn(numel, generator=g) * 1000
            out[f"t{i}_{str(dtype).removeprefix('torch.')}"] = values.to(dtype).reshape(1, -1)
    return out


def test_data_written_equals_data_captured(tmp_path: Path) -> None:
    tensors = captured()
    writer = AsyncWriter(BundleWriter(tmp_path, 0, 1, "reference"))
    pool: HostBuffers = writer.buffers
    for name, t in tensors.items():
        host = pool.take(t.shape, t.dtype)  # as hooks hand tensors over: pooled blocks
        host.copy_(t)
        writer.put(TensorKey("nominal", 0, 0, "m", "forward_output", name), host, None)
    record = writer.close()
    path = tmp_path / "rank-00000.h5"
    assert (record.file_size, record.crc32) == file_checksum(path)
    assert record.tensors == len(tensors) and writer.bytes_written == record.bytes
    with h5py.File(path) as f:
        for name, t in tensors.items():
            stored = f[f"nominal/iter_0/mb_0/m/forward_output/{name}"][()]
            expected = t.contiguous().view(torch.uint8).numpy().tobytes()
            assert stored.tobytes() == expected, name


_REFUSED = """
import resource, signal, sys
from pathlib import Path
import torch
from ttrace.bundle import BundleWriter, TensorKey
from ttrace.capture.async_writer import AsyncWriter
from ttrace.capture.write_error import WriteError

folder = Path(sys.argv[1])
writer = AsyncWriter(BundleWriter(folder, 0, 1, "reference"))
key = lambda i: TensorKey("nominal", i, 0, "layers.0.mlp", "forward_output", "0")
writer.put(key(0), torch.ones(64, 1024), None)  # 256 KiB: the direct path
writer.flush()
# The kernel refuses writes past 1 MiB more than the file holds now (EFBIG): a disk that
# fills in the middle of a tensor's bytes, which os.pwrite writes.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = (folder / "rank-00000.h5").stat().st_size + (1 << 20)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
writer.put(key(1), torch.ones(1024, 1024), None)  # 4 MiB
try:
    writer.close()
except WriteError as error:
    print("ERROR", error.code, error)
"""


def test_refused_direct_write_names_file_and_tensor(tmp_path: Path) -> None:
    folder = tmp_path / "b"
    script = tmp_path / "refuse.py"
    script.write_text(textwrap.dedent(_REFUSED))
    proc = subprocess.run(
        [sys.executable, str(script), str(folder)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("ERROR"))
    assert line.startswith("ERROR write_failed"), line
    path = folder / "rank-00000.h5"
    assert str(path) in line and "/nominal/iter_1/mb_0/layers.0.mlp/forward_output/0" in line
    with h5py.File(path) as f:  # cut back to its last flush: the first tensor, whole
        assert (f["nominal/iter_0/mb_0/layers.0.mlp/forward_output/0"][()] == 1).all()
        assert "iter_1" not in f["nominal"]
