"""Rank 0's ROUTER socket, owned by one thread: authenticates every request, answers
`hello` and `ping` itself (also while a replay runs), refuses a second replay with `busy`,
and hands `replay`/`shutdown` to the serve loop on the main thread through a queue.

Only this thread touches the socket (ZeroMQ sockets are not thread-safe); replies from the
serve loop come back through `outbox`. A reply to a client that has gone is dropped by the
ROUTER socket (no ROUTER_MANDATORY), so a vanished client cannot wedge the agent.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Collection
from typing import Any

import zmq

from .errors import AgentError, ErrorCode
from .replay_request import ReplayRequest
from .token_file import token_matches
from .wire import (
    HARD_MAX_MESSAGE,
    Request,
    error_frames,
    parse_request,
    reply_frames,
    request_id,
)

log = logging.getLogger("ttrace.agent")
POLL_MS = 20


class SocketServer:
    def __init__(
        self,
        host: str,
        port: int,
        token: str,
        hello: dict[str, Any],
        modules: Collection[str],
        variants: Collection[str],
    ) -> None:
        self.token = token
        self.hello = hello
        self.modules = set(modules)
        self.variants = set(variants)
        self.inbox: queue.Queue[tuple[bytes, Request, ReplayRequest | None]] = queue.Queue()
        self.outbox: queue.Queue[tuple[bytes, list[bytes]]] = queue.Queue()
        self.busy = False
        self.started = time.monotonic()
        self.last_activity = self.started
        self._stop = threading.Event()
        self._context = zmq.Context()
        self.socket = self._context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.MAXMSGSIZE, HARD_MAX_MESSAGE)
        self.socket.setsockopt(zmq.LINGER, 2000)  # let the last replies (shutdown) go out
        self.socket.setsockopt(zmq.SNDHWM, 64)
        bound = f"tcp://{host}:{port}" if port else f"tcp://{host}:*"
        try:
            self.socket.bind(bound)
        except zmq.ZMQError:
            self.socket.close(0)
            self._context.term()
            raise
        endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self.port = int(endpoint.rsplit(":", 1)[1])
        self._thread = threading.Thread(target=self._run, name="ttrace-agent-socket", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def close_unstarted(self) -> None:
        """Release the socket of a server whose thread never started (setup failed)."""
        self.socket.close(0)
        self._context.term()

    def reply(self, identity: bytes, frames: list[bytes], done: bool = True) -> None:
        """From the serve loop: queue a reply; `done` ends the busy state."""
        self.outbox.put((identity, frames))
        if done:
            self.busy = False

    # --- the socket thread ------------------------------------------------------------------

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                if poller.poll(POLL_MS):
                    self._receive()
                self._flush()
            self._flush()
        finally:
            self.socket.close()
            self._context.term()

    def _flush(self) -> None:
        while True:
            try:
                identity, frames = self.outbox.get_nowait()
            except queue.Empty:
                return
            try:
                self.socket.send_multipart([identity, *frames], flags=zmq.NOBLOCK)
            except zmq.ZMQError as exc:  # peer gone or its queue full: drop the reply
                log.warning("ttrace agent: reply dropped: %s", exc)

    def _receive(self) -> None:
        try:
            message = self.socket.recv_multipart(flags=zmq.NOBLOCK)
        except zmq.Again:
            return
        if len(message) < 2:
            return  # a ROUTER message always has the peer identity first
        identity, frames = message[0], message[1:]
        try:
            self._handle(identity, frames)
        except AgentError as exc:
            rid = None if exc.code is ErrorCode.TOO_LARGE else request_id(frames)
            self.outbox.put((identity, error_frames(rid, exc)))
        except Exception as exc:  # never let one request kill the socket thread
            log.exception("ttrace agent: request failed")
            error = AgentError(ErrorCode.MALFORMED, f"{type(exc).__name__}: {exc}")
            self.outbox.put((identity, error_frames(None, error)))

    def _handle(self, identity: bytes, frames: list[bytes]) -> None:
        req = parse_request(frames)
        if not token_matches(self.token, req.token):
            raise AgentError(ErrorCode.UNAUTHENTICATED, "wrong or missing token")
        self.last_activity = time.monotonic()
        if req.op == "ping":
            uptime = time.monotonic() - self.started
            self.outbox.put(
                (identity, reply_frames(req.id, "ok", {"busy": self.busy, "uptime_s": uptime}))
            )
        elif req.op == "hello":
            self.outbox.put((identity, reply_frames(req.id, "ok", self.hello)))
        elif req.op in ("replay", "shutdown"):
            replay = (
                ReplayRequest.from_body(req.body, self.modules, self.variants)
                if req.op == "replay"
                else None
            )
            if self.busy:
                self.outbox.put((identity, reply_frames(req.id, "busy", {})))
                return
            self.busy = True
            self.inbox.put((identity, req, replay))
        else:
            raise AgentError(ErrorCode.UNKNOWN_OP, f"unknown op {req.op!r}")
