"""A free local TCP port, for the rendezvous of the process groups tests start."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (the kernel's pick; another process may take it before
    the job binds it, which the tests accept as the cost of not hard-coding one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
