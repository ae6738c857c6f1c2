"""The host buffer pool captured tensors are copied into: blocks are reused, the memory cap
holds, and a block is never handed out again while the writer still holds it."""

from __future__ import annotations

import threading
from pathlib import Path

import h5py
import numpy as np
import torch

from ttrace.bundle import BundleWriter, TensorKey
from ttrace.capture.async_writer import AsyncWriter
from ttrace.capture.host_buffers import HostBuffers
from ttrace.capture.host_copy import attach_ready_event, to_host


def test_a_given_back_block_is_reused_for_the_next_tensor_of_its_size() -> None:
    pool = HostBuffers(1 << 20)
    a = pool.take((4, 8), torch.float32)
    pointer = a.data_ptr()
    pool.give_back(a)
    assert pool.idle_bytes == 128 and pool.lent_bytes == 0
    b = pool.take((8, 4), torch.float32)  # same byte size, other shape
    assert b.data_ptr() == pointer and b.shape == (8, 4)
    c = pool.take((2, 8), torch.int64)  # same bytes, other dtype
    assert c.data_ptr() != pointer
    assert (pool.reused, pool.allocated) == (1, 2)


def test_a_block_still_held_is_never_handed_out() -> None:
    pool = HostBuffers(1 << 20)
    held = [pool.take((16,), torch.float32) for _ in range(3)]
    assert len({t.data_ptr() for t in held}) == 3
    pool.give_back(held[1])
    again = pool.take((16,), torch.float32)
    assert again.data_ptr() == held[1].data_ptr()
    assert again.data_ptr() not in (held[0].data_ptr(), held[2].data_ptr())


def test_giving_back_twice_or_a_foreign_tensor_changes_nothing() -> None:
    pool = HostBuffers(1 << 20)
    a = pool.take((16,), torch.float32)
    pool.give_back(a)
    pool.give_back(a)
    pool.give_back(torch.zeros(16))
    assert pool.idle_bytes == 64 and pool.lent_bytes == 0
    first, second = pool.take((16,), torch.float32), pool.take((16,), torch.float32)
    assert first.data_ptr() != second.data_ptr()


def test_the_cap_bounds_lent_and_idle_blocks_together() -> None:
    pool = HostBuffers(1000)
    a = pool.take((100,), torch.float32)  # 400 bytes
    b = pool.take((100,), torch.float32)
    c = pool.take((100,), torch.float32)  # over the cap: still lent, never blocks
    assert pool.lent_bytes == 1200
    for t in (a, b, c):
        pool.give_back(t)
    assert pool.lent_bytes == 0 and pool.idle_bytes == 800  # the third was let go
    d = pool.take((200,), torch.float32)  # 800 bytes: idle blocks make room
    assert pool.lent_bytes + pool.idle_bytes <= 1000
    pool.give_back(d)
    assert pool.lent_bytes + pool.idle_bytes <= 1000


def test_pooled_copies_equal_the_unpooled_ones() -> None:
    pool = HostBuffers(1 << 20)
    t = torch.randn(6, 5).t()  # not contiguous
    bf = torch.randn(7, 3).to(torch.bfloat16)
    for source, scale in ((t, 1.0), (t, 0.25), (bf, 1.0), (bf, 1 / 3), (torch.tensor(2.5), 0.5)):
        pooled, plain = to_host(source, scale, pool), to_host(source, scale)
        assert pooled.dtype == plain.dtype and pooled.shape == plain.shape
        assert torch.equal(pooled, plain)
        pool.give_back(pooled)
    ids = torch.arange(5)
    scaled = to_host(ids, 0.5, pool)  # promoted to float, as without the pool
    assert scaled.dtype == (ids * 0.5).dtype and torch.equal(scaled, ids * 0.5)
    assert pool.lent_bytes == 0


class HeldCopy:
    """Stands in for a CUDA copy event: the writer waits until the test releases it."""

    def __init__(self) -> None:
        self.done = threading.Event()

    def synchronize(self) -> None:
        assert self.done.wait(10.0)


def test_the_writer_gives_a_block_back_only_after_writing_it(tmp_path: Path) -> None:
    writer = AsyncWriter(BundleWriter(tmp_path, 0, 1, "reference"))
    pool = writer.buffers
    first = to_host(torch.full((32,), 7.0), buffers=pool)
    copy = HeldCopy()
    writer.put(
        TensorKey("nominal", 0, 0, "m", "forward_output", "0"),
        attach_ready_event(first, copy),
        None,
    )
    # The writer holds `first` (waiting for its copy): the same size gets another block.
    second = to_host(torch.full((32,), 8.0), buffers=pool)
    assert second.data_ptr() != first.data_ptr()
    copy.done.set()
    writer.put(TensorKey("nominal", 0, 0, "m", "forward_output", "1"), second, None)
    writer.flush()
    assert pool.lent_bytes == 0 and pool.idle_bytes == 256
    third = to_host(torch.full((32,), 9.0), buffers=pool)
    assert third.data_ptr() in (first.data_ptr(), second.data_ptr())
    writer.close()
    with h5py.File(tmp_path / "rank-00000.h5") as f:
        group = f["nominal/iter_0/mb_0/m/forward_output"]
        assert np.all(group["0"][()] == 7.0) and np.all(group["1"][()] == 8.0)
