"""The capture's writer against a plain write of the same bytes, on the same disk.

One traced step of one rank, as the capture wrote it (the datasets of one iteration of a
rank file), is written again, into the same folder:
- by the capture's writer: `AsyncWriter` over `BundleWriter`, every tensor queued as the
  hooks queue them, then `close()` (which fsyncs the file and checksums it);
- plainly: the same tensors' bytes with `os.write` into as many files (one), then fsync.
Both start with the tensors in host memory and end when the file is on the disk. The two
alternate, `rounds` times; medians are compared. Used by `capture_overhead.py`, which runs
it as a script under each compared version's PYTHONPATH:

    python bench/writer_throughput.py RANK_FILE ITERATION WORK_FOLDER ROUNDS   # prints JSON
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import torch

from ttrace.bundle import BundleWriter, TensorKey
from ttrace.bundle.dtypes import DType
from ttrace.capture.async_writer import AsyncWriter


def one_step(rank_file: Path, iteration: int) -> list[tuple[TensorKey, torch.Tensor]]:
    """The tensors of `iteration` (nominal variant) in a rank file, as host tensors."""
    found: list[tuple[TensorKey, torch.Tensor]] = []
    prefix = f"nominal/iter_{iteration}/"

    def visit(name: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset) and name.startswith(prefix):
            kind = DType.from_name(str(obj.attrs["dtype"]))
            array = obj[()]
            if kind.raw:  # bfloat16/float16/float8 stored as raw bits: write the bits back
                found.append((TensorKey.from_path("/" + name), _raw(array, kind)))
            else:
                found.append((TensorKey.from_path("/" + name), torch.from_numpy(array)))

    with h5py.File(rank_file, "r") as f:
        f.visititems(visit)
    return found


def _raw(array: np.ndarray, kind: DType) -> torch.Tensor:
    bits = torch.from_numpy(np.ascontiguousarray(array))
    return bits.view(getattr(torch, kind.name))


def write_with_capture(folder: Path, tensors: list[tuple[TensorKey, torch.Tensor]]) -> float:
    copies = [t.clone() for _, t in tensors]  # private copies, as the hooks hand over
    start = time.perf_counter()
    writer = AsyncWriter(BundleWriter(folder, 0, 1, "reference"))
    for (key, _), tensor in zip(tensors, copies, strict=True):
        writer.put(key, tensor, None)
    writer.close()
    return time.perf_counter() - start


def write_plainly(folder: Path, tensors: list[tuple[TensorKey, torch.Tensor]]) -> float:
    copies = [t.clone() for _, t in tensors]
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    fd = os.open(folder / "plain.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for tensor in copies:
            view = memoryview(tensor.contiguous().view(torch.uint8).numpy())
            while len(view):
                view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - start


def compare(rank_file: Path, iteration: int, work: Path, rounds: int = 3) -> dict[str, float]:
    """Medians of `rounds` alternating writes: MB/s of each and their ratio."""
    tensors = one_step(rank_file, iteration)
    nbytes = sum(t.numel() * t.element_size() for _, t in tensors)
    capture, plain = [], []
    for i in range(rounds):
        for name, write, times in (
            ("capture", write_with_capture, capture),
            ("plain", write_plainly, plain),
        ):
            folder = work / f"{name}-{i}"
            times.append(write(folder, tensors))
            shutil.rmtree(folder)
    writer_mb_s = nbytes / statistics.median(capture) / 1e6
    plain_mb_s = nbytes / statistics.median(plain) / 1e6
    return {
        "MB": nbytes / 1e6,
        "tensors": float(len(tensors)),
        "writer MB/s": writer_mb_s,
        "plain MB/s": plain_mb_s,
        "writer/plain": writer_mb_s / plain_mb_s,
    }


if __name__ == "__main__":
    rank_file, iteration, work, rounds = sys.argv[1:5]
    print(json.dumps(compare(Path(rank_file), int(iteration), Path(work), int(rounds))))
