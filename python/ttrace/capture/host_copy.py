"""Private host copies of captured tensors that never stall the device.

On CUDA a blocking `.to("cpu")` in a hook synchronizes the device at every module. Instead
the copy goes into pinned host memory on a side stream that first waits for the compute
stream (so it reads the finished value), and an event recorded after the copy travels with
the host tensor (`ready_event`). The writer thread waits on that event, never the hook. The
source's memory is marked as used by the side stream (`record_stream`), so the caching
allocator does not hand it out again before the copy has read it.

On the CPU the copy is a plain copy and there is no event; the writer's wait is the same
code path with nothing to wait for.

With a `HostBuffers` pool the copy lands in a block the writer gives back once written
(pinned blocks on CUDA), instead of fresh memory per tensor.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from .dtensor_placement import is_dtensor
from .host_buffers import HostBuffers

_READY_ATTR = "_ttrace_ready"


class ReadyEvent(Protocol):
    def synchronize(self) -> Any: ...


def ready_event(host: torch.Tensor) -> ReadyEvent | None:
    """The event to wait on before reading `host`, or None when it is ready."""
    return getattr(host, _READY_ATTR, None)


def attach_ready_event(host: torch.Tensor, event: ReadyEvent) -> torch.Tensor:
    setattr(host, _READY_ATTR, event)
    return host


def wait_ready(host: torch.Tensor) -> None:
    event = ready_event(host)
    if event is not None:
        event.synchronize()


class _SideStreams:
    """One copy stream per CUDA device, created on first use."""

    def __init__(self) -> None:
        self._streams: dict[int, Any] = {}

    def get(self, device: torch.device) -> Any:
        index = device.index if device.index is not None else torch.cuda.current_device()
        if index not in self._streams:
            self._streams[index] = torch.cuda.Stream(device=index)
        return self._streams[index]


_STREAMS = _SideStreams()


def to_host(
    t: torch.Tensor, scale: float = 1.0, buffers: HostBuffers | None = None
) -> torch.Tensor:
    """A private host copy of `t` times `scale` (the original may be updated in place later).

    Scaling happens on the tensor's own device, before the copy, so that the host copy is
    never touched while a device copy into it may still be running. `buffers`: the pool the
    copy is taken from (given back by whoever writes it)."""
    t = t.detach()
    if is_dtensor(t):
        # Its local shard is taken later (`to_local`); a DTensor keeps the plain copy.
        copy = t.to("cpu", copy=True) if t.device.type != "cpu" else t.clone()
        return copy.mul_(scale) if scale != 1.0 else copy
    pooled = buffers is not None and _poolable(t, scale)
    if t.device.type == "cpu" and pooled:
        assert buffers is not None
        host = buffers.take(t.shape, t.dtype)
        # The same kernels as `t * scale` and `t.clone()`, writing into the pooled block.
        return torch.mul(t, scale, out=host) if scale != 1.0 else host.copy_(t)
    if scale != 1.0:
        t = t * scale  # already a private tensor
        if t.device.type == "cpu":
            return t
    if t.device.type == "cuda":
        return _cuda_to_host(t, buffers if pooled else None)
    if t.device.type != "cpu":
        return t.to("cpu", copy=True)
    return t.clone()


def _poolable(t: torch.Tensor, scale: float) -> bool:
    """A dense tensor whose scaled copy keeps its dtype (an integer tensor times a float
    scale would be promoted, so it takes the unpooled path)."""
    if t.layout != torch.strided or t.is_quantized:
        return False
    return scale == 1.0 or torch.result_type(t, scale) == t.dtype


def _cuda_to_host(t: torch.Tensor, buffers: HostBuffers | None) -> torch.Tensor:
    source = t if t.is_contiguous() else t.contiguous()
    if buffers is not None:
        # A pooled block is given back only after the writer waited for this copy's event.
        host = buffers.take(source.shape, source.dtype, pinned=True)
    else:
        host = torch.empty(source.shape, dtype=source.dtype, device="cpu", pin_memory=True)
    stream = _STREAMS.get(source.device)
    stream.wait_stream(torch.cuda.current_stream(source.device))
    with torch.cuda.stream(stream):
        host.copy_(source, non_blocking=True)
        event = torch.cuda.Event()
        event.record(stream)
    source.record_stream(stream)
    return attach_ready_event(host, event)
