"""The serve loop every rank runs after capture (docs/protocol.md, docs/localize.md).

Each tick, all ranks sync (rank 0's command length, anyone's stop flag); rank 0 waits at
most one tick for a request from its socket thread, so the other ranks learn of a SIGTERM,
a shutdown or the idle timeout within a tick, and all leave the loop together.
"""

from __future__ import annotations

import json
import logging
import queue
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import AgentError, ErrorCode
from .rank_channel import RankChannel
from .rank_worker import RankWorker
from .replay_request import ReplayRequest
from .shard_codec import merge_blobs
from .socket_server import SocketServer
from .wire import error_frames, reply_frames

log = logging.getLogger("ttrace.agent")
TICK_S = 0.1


@contextmanager
def sigterm_flag() -> Iterator[threading.Event]:
    """An event set by SIGTERM while serving (handlers can only be set on the main thread;
    elsewhere SIGTERM keeps its old meaning)."""
    flag = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: flag.set())
    try:
        yield flag
    finally:
        signal.signal(signal.SIGTERM, previous)


class ServeLoop:
    def __init__(
        self,
        channel: RankChannel,
        worker: RankWorker,
        server: SocketServer | None,
        idle_timeout: float,
    ) -> None:
        self.channel = channel
        self.worker = worker
        self.server = server  # rank 0 only
        self.idle_timeout = idle_timeout

    def run(self) -> None:
        with sigterm_flag() as sigterm:
            while True:
                pending, stop = self._next_request()
                payload = json.dumps(pending[2].to_json()).encode() if pending else b""
                length, stop = self.channel.sync(len(payload), stop or sigterm.is_set())
                if stop:
                    if pending is not None and self.server is not None:
                        error = AgentError(ErrorCode.REPLAY_FAILED, "the agent is shutting down")
                        self.server.reply(pending[0], error_frames(pending[1], error))
                    return
                if length:
                    try:
                        self._replay(self.channel.broadcast(payload, length), pending)
                    except Exception as exc:
                        self._failed(pending, exc)
                        raise

    def _failed(self, pending: Any, exc: Exception) -> None:
        """A collective of the replay failed (a rank died, a link broke): the job cannot
        serve on, but the client waiting for this replay gets an answer, not silence."""
        if pending is None or self.server is None:
            return
        error = AgentError(
            ErrorCode.REPLAY_FAILED,
            f"the agent failed during the replay and stops (a rank died or a collective "
            f"failed): {type(exc).__name__}: {exc}",
        )
        self.server.reply(pending[0], error_frames(pending[1], error))

    def _next_request(self) -> tuple[tuple[bytes, int | None, ReplayRequest] | None, bool]:
        """Rank 0: (the next replay, or None; whether to stop). Other ranks: (None, False)."""
        server = self.server
        if server is None:
            return None, False
        try:
            identity, req, replay = server.inbox.get(timeout=TICK_S)
        except queue.Empty:
            return None, time.monotonic() - server.last_activity > self.idle_timeout
        if req.op == "shutdown":
            server.reply(identity, reply_frames(req.id, "ok", {}))
            return None, True
        assert replay is not None
        return (identity, req.id, replay), False

    def _replay(self, payload: bytes, pending: Any) -> None:
        req = ReplayRequest(**json.loads(payload.decode("utf-8")))
        req = ReplayRequest(
            req.module, req.iteration, req.micro_batch, req.phase, tuple(req.variants)
        )
        started = time.perf_counter()
        blobs = self.channel.gather(self.worker.execute(req))
        if self.server is None or pending is None or blobs is None:
            return
        identity, rid, _ = pending
        try:
            entries, frames = merge_blobs(blobs)
        except AgentError as exc:
            self.server.reply(identity, error_frames(rid, exc))
            return
        seconds = time.perf_counter() - started
        self.server.reply(
            identity, reply_frames(rid, "ok", {"seconds": seconds, "tensors": entries}, frames)
        )
