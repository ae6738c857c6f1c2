"""The copy path of capture without a GPU: scaling before the copy, the writer's wait on a
copy's ready event (the CUDA path's ordering, with an event that is set by hand), and every
random generator restored for perturbed variants."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import h5py
import numpy as np
import torch
from torch import nn

from ttrace.bundle import BundleWriter, TensorKey
from ttrace.capture.async_writer import AsyncWriter
from ttrace.capture.generator_states import GeneratorStates
from ttrace.capture.host_copy import attach_ready_event, to_host


def test_host_copy_is_private_and_scaled_before_copying() -> None:
    t = torch.arange(6, dtype=torch.float32)
    plain = to_host(t)
    scaled = to_host(t, 0.5)
    t.add_(100.0)  # a later in-place update of the original
    assert torch.equal(plain, torch.arange(6, dtype=torch.float32))
    assert torch.equal(scaled, torch.arange(6, dtype=torch.float32) * 0.5)


class SlowCopy:
    """Stands in for a CUDA event: ready only when the test says so."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.waited = False

    def synchronize(self) -> None:
        self.waited = True
        assert self.done.wait(10.0)


def test_writer_waits_for_the_copy_event_not_the_hook(tmp_path: Path) -> None:
    writer = AsyncWriter(BundleWriter(tmp_path, 0, 1, "reference"))
    host = torch.zeros(4)
    event = SlowCopy()
    key = TensorKey("nominal", 0, 0, "m", "forward_output", "0")
    start = time.perf_counter()
    writer.put(key, attach_ready_event(host, event), None)
    assert time.perf_counter() - start < 1.0  # the hook's side returned at once
    time.sleep(0.2)
    assert event.waited and writer.tensors_written == 0
    host.fill_(7.0)  # the "copy" lands, then the event fires
    event.done.set()
    writer.close()
    with h5py.File(tmp_path / "rank-00000.h5") as f:
        assert np.array_equal(f[key.path][()], np.full(4, 7.0, dtype=np.float32))


class WithGenerator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gen = torch.Generator().manual_seed(5)


def test_every_generator_is_restored() -> None:
    model = WithGenerator()
    torch.manual_seed(3)
    saved = GeneratorStates([model])
    first = (torch.rand(3), torch.rand(3, generator=model.gen))
    saved.restore()
    again = (torch.rand(3), torch.rand(3, generator=model.gen))
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
