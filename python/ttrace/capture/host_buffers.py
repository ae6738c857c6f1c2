"""Reusable host buffers for the private copies captured tensors travel in.

Every captured tensor is copied to host memory before it is queued for the writer. A fresh
allocation per tensor costs more than the copy itself: large blocks come straight from the
kernel (mmap), so every page of every copy is faulted in and zeroed, then returned when the
writer drops it, once per tensor per step. Training steps repeat the same shapes, so the
pool hands the same blocks out again: a block lent to a hook is given back by the writer
once its bytes are in the file (never earlier), and the next tensor of that size reuses it.

Blocks are kept by byte size (and pinned or not: on CUDA the side-stream copies land in
pinned memory). The pool never keeps more than `cap_bytes` lent plus idle, the host memory
cap the writer already enforces for pending tensors; a block given back beyond that, or one
that has sat idle while blocks of other sizes were wanted, is simply dropped.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import torch

_BLOCK_ATTR = "_ttrace_block"


class HostBuffers:
    def __init__(self, cap_bytes: int) -> None:
        self.cap = int(cap_bytes)
        self._idle: OrderedDict[tuple[int, bool], list[torch.Tensor]] = OrderedDict()
        self._idle_bytes = 0
        self._lent_bytes = 0
        self._lock = threading.Lock()
        self.reused = 0  # tensors served from an idle block
        self.allocated = 0  # tensors that needed a new block

    @property
    def idle_bytes(self) -> int:
        return self._idle_bytes

    @property
    def lent_bytes(self) -> int:
        return self._lent_bytes

    def take(
        self, shape: torch.Size | tuple[int, ...], dtype: torch.dtype, pinned: bool = False
    ) -> torch.Tensor:
        """An uninitialized contiguous host tensor of `shape` and `dtype` that nobody else
        holds; give it back (`give_back`) once its bytes are no longer needed."""
        numel = 1
        for n in shape:
            numel *= int(n)
        nbytes = numel * dtype.itemsize
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype, pin_memory=pinned)
        key = (nbytes, pinned)
        with self._lock:
            blocks = self._idle.get(key)
            block = blocks.pop() if blocks else None
            if block is not None:
                self._idle_bytes -= nbytes
                if not blocks:
                    del self._idle[key]
                self.reused += 1
            else:
                self._evict(nbytes)
                self.allocated += 1
            self._lent_bytes += nbytes
        if block is None:
            block = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
        tensor = block.view(dtype).view(shape)
        setattr(tensor, _BLOCK_ATTR, (key, block))
        return tensor

    def give_back(self, tensor: torch.Tensor) -> None:
        """The holder of `tensor` (from `take`) is done with it; anything else: no-op. Giving
        a tensor back twice is harmless (the second time it is no longer marked)."""
        lent = tensor.__dict__.pop(_BLOCK_ATTR, None)
        if lent is None:
            return
        key, block = lent
        nbytes = key[0]
        with self._lock:
            self._lent_bytes -= nbytes
            if self._lent_bytes + self._idle_bytes + nbytes > self.cap:
                return  # over the cap: let the block go
            self._idle.setdefault(key, []).append(block)
            self._idle.move_to_end(key)
            self._idle_bytes += nbytes

    def clear(self) -> None:
        with self._lock:
            self._idle.clear()
            self._idle_bytes = 0

    def _evict(self, nbytes: int) -> None:
        """Drop idle blocks, least recently given back first, until a new block of
        `nbytes` fits under the cap (caller holds the lock)."""
        while self._idle and self._lent_bytes + self._idle_bytes + nbytes > self.cap:
            key, blocks = next(iter(self._idle.items()))
            blocks.pop(0)
            self._idle_bytes -= key[0]
            if not blocks:
                del self._idle[key]
