"""Moves captured tensors to disk on a background thread.

Hooks hand over tensors already copied to host memory (so later in-place updates of the
original cannot change what gets written) and return at once; one thread writes them into
the rank's HDF5 file in order. A byte budget bounds the host memory held by pending tensors:
the producer blocks only while the budget is exceeded. A failed write (a full disk) stops the
capture: the rank file is cut back to its last flush and closed without writing more
(`BundleWriter.abandon`), the status record says `failed` and why, further tensors are
dropped, and the failure (`WriteError`, naming rank, file, tensor and bytes) is raised at the
next `put`, `flush` or `close`, or only logged when `raise_errors` is False.

Durable points: at the end of every training step, and every `DURABLE_SECONDS` within a
long one, the thread flushes the rank file and then rewrites the rank's status record
(`ttrace.bundle.rank_status`). A job killed between two flushes leaves a file that holds at
least what its record claims, and a record that names the last tensor on disk. A kill in
the middle of a flush (milliseconds) can leave the file unreadable, which readers report;
flushing rarely keeps that window small.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque

import torch

from ttrace.bundle import BundleWriter, Placement, RankRecord, TensorKey
from ttrace.bundle.rank_status import RankStatus

from .capture_estimate import CaptureEstimate
from .errors import TracerError
from .host_buffers import HostBuffers
from .host_copy import wait_ready
from .phase_times import PhaseTimes
from .write_error import WriteError

log = logging.getLogger("ttrace.capture")

_STOP = object()
_STEP_DONE = object()
DURABLE_SECONDS = 10.0


class AsyncWriter:
    def __init__(
        self,
        writer: BundleWriter,
        memory_cap_bytes: int = 1 << 30,
        status: RankStatus | None = None,
        raise_errors: bool = True,
    ) -> None:
        self.writer = writer
        self.status = status
        self.raise_errors = raise_errors
        self._durable_at = time.monotonic()
        self.cap = int(memory_cap_bytes)
        # Hooks copy into blocks of this pool; a block comes back here once written.
        self.buffers = HostBuffers(self.cap)
        self.phases = PhaseTimes()
        self._items: deque = deque()
        self._pending_bytes = 0
        self._cond = threading.Condition()
        self._error: TracerError | None = None
        self._busy = False
        self.peak_pending_bytes = 0
        self.bytes_written = 0
        self.tensors_written = 0
        self._record: RankRecord | None = None
        # Told the bytes of each step once it is queued (the first refines the estimate).
        self.estimate: CaptureEstimate | None = None
        self._step_bytes = 0
        self._thread = threading.Thread(target=self._run, name="ttrace-writer", daemon=True)
        self._thread.start()

    def put(
        self,
        key: TensorKey,
        tensor: torch.Tensor,
        placement: Placement | None,
        notes: dict[str, str] | None = None,
    ) -> None:
        """Queue a host tensor the caller will not touch again (`notes`: string attributes
        stored with it, such as `layout_note`)."""
        nbytes = tensor.numel() * tensor.element_size()
        with self._cond:
            if self._error is not None and not self.raise_errors:
                self._drop(tensor)
                return
            self._raise_pending()
            # Block only when over budget and something is in flight that will free memory.
            while self._pending_bytes > 0 and self._pending_bytes + nbytes > self.cap:
                self._cond.wait()
                self._raise_pending()
            self._items.append((key, tensor, placement, notes, nbytes))
            self._pending_bytes += nbytes
            self._step_bytes += nbytes
            self.peak_pending_bytes = max(self.peak_pending_bytes, self._pending_bytes)
            self._cond.notify_all()

    def step_done(self, variant: str, iteration: int) -> None:
        """Every tensor of step (variant, iteration) is queued: once they are written, the
        file is flushed and the status record lists the step as finished."""
        with self._cond:
            self._items.append((_STEP_DONE, (variant, int(iteration)), None, None, 0))
            self._cond.notify_all()
            nbytes, self._step_bytes = self._step_bytes, 0
        if self.estimate is not None:
            self.estimate.step_queued(int(iteration), nbytes)

    def flush(self) -> None:
        """Wait until everything queued is on disk and the file is flushed."""
        with self._cond:
            while (self._items or self._busy) and self._error is None:
                self._cond.wait()
            self._raise_pending()
        self.writer.flush()

    def close(self, state: str = "closed") -> RankRecord:
        """Drain, stop the thread and close the rank file (also after a failure); `state`:
        what the status record says then ("exited": at exit, without `Tracer.close()`)."""
        if self._record is not None:
            return self._record
        with self._cond:
            self._items.append((_STOP, None, None, None, 0))
            self._cond.notify_all()
        self._thread.join()
        self._record = self.writer.close()
        if self.status is not None and self._error is None:
            self.status.state = state
            self.status.tensors, self.status.bytes = self.writer.tensors, self.writer.bytes
            self.status.last_tensor = self.writer.last_path
            self._write_status()
        with self._cond:
            self._raise_pending()
        return self._record

    @property
    def error(self) -> TracerError | None:
        return self._error

    def _raise_pending(self) -> None:
        if self._error is not None and self.raise_errors:
            raise self._error

    def _drop(self, tensor: torch.Tensor) -> None:
        wait_ready(tensor)  # its block may still be the target of a device copy
        self.buffers.give_back(tensor)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._items:
                    self._cond.wait()
                key, tensor, placement, notes, nbytes = self._items.popleft()
                self._busy = key is not _STOP
            if key is _STOP:
                return
            try:
                if key is _STEP_DONE:
                    self._durable_point(tensor)
                elif self._error is None:
                    wait_ready(tensor)  # a device-to-host copy still in flight
                    start = time.thread_time()
                    self.writer.write(key, tensor, placement, notes=notes)
                    self.phases.add("writer_cpu", time.thread_time() - start)
                    self.bytes_written += nbytes
                    self.tensors_written += 1
                    if time.monotonic() - self._durable_at >= DURABLE_SECONDS:
                        self._durable_point()
            except Exception as exc:  # keep the thread alive to drain and release producers
                self._fail(key, nbytes, exc)
            finally:
                if isinstance(tensor, torch.Tensor):
                    self._drop(tensor)  # written or dropped: never read again
                with self._cond:
                    self._pending_bytes -= nbytes
                    self._busy = False
                    self._cond.notify_all()

    def _fail(self, key: object, nbytes: int, exc: Exception) -> None:
        """Stop the capture after a failed write; see the module's docstring."""
        w = self.writer
        if isinstance(key, TensorKey):
            what = f"writing {key.path} ({nbytes} bytes)"
        else:  # a durable point: the flush (or the record after it)
            what = f"flushing the {w.bytes - w.durable_bytes} bytes written since its last flush"
        steps = list(self.status.steps_done) if self.status is not None else []
        # The file system failed (a full disk): cut the file back to its last flush. Else
        # the tensor was refused before anything touched the file, which stays as it is.
        cut_back = isinstance(exc, OSError)
        error = WriteError(
            rank=w.rank,
            file=w.path,
            what=what,
            kept=(w.durable_tensors, w.durable_bytes) if cut_back else (w.tensors, w.bytes),
            steps=steps,
            cut_back=cut_back,
            cause=exc,
            training_continues=not self.raise_errors,
        )
        error.__cause__ = exc
        (log.error if self.raise_errors else log.warning)("%s", error)
        try:
            if cut_back:
                w.abandon()
        except OSError as cut:
            log.error(
                "ttrace: rank %d: could not cut %s back to its last flush: %s", w.rank, w.path, cut
            )
        finally:
            with self._cond:  # only now: flush() waits for this thread until it is set
                self._error = error
        if self.status is not None:
            self.status.state, self.status.error = "failed", error.reason
            try:  # cutting the file back freed room for it, unless others filled it again
                self._write_status()
            except OSError as lost:
                log.error("ttrace: rank %d: status record not updated: %s", w.rank, lost)

    def _durable_point(self, step: tuple[str, int] | None = None) -> None:
        """Flush the rank file, then say so in the status record, with `step` finished (in
        this order: the record must never claim more than the file holds)."""
        if self.status is None or self._error is not None:
            return
        start = time.thread_time()
        self.writer.flush()
        if step is not None and step not in self.status.steps_done:
            self.status.steps_done.append(step)
        self._durable_at = time.monotonic()
        self.status.tensors = self.writer.tensors
        self.status.bytes = self.writer.bytes
        self.status.last_tensor = self.writer.last_path
        self._write_status()
        self.phases.add("writer_flush_cpu", time.thread_time() - start)

    def _write_status(self) -> None:
        assert self.status is not None
        self.status.write(self.writer.bundle_dir)
