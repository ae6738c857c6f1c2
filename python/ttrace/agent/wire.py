"""Frames of the localize protocol, version 2 (docs/protocol.md): requests are one JSON
frame; replies are a JSON header frame followed by raw tensor payload frames."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ttrace._version import __version__

from .errors import AgentError, ErrorCode

PROTOCOL = 2
AGENT = f"ttrace {__version__}"
MAX_REQUEST = 64 * 1024  # larger requests get `too_large`
HARD_MAX_MESSAGE = 1024 * 1024  # ZMQ_MAXMSGSIZE: ZeroMQ drops the peer beyond this
OPS = ("hello", "ping", "replay", "shutdown")


@dataclass(frozen=True)
class Request:
    id: int | None
    op: str
    token: str
    body: dict[str, Any]


def _field(body: dict[str, Any], name: str, kind: type, required: bool = True) -> Any:
    if name not in body:
        if required:
            raise AgentError(ErrorCode.MALFORMED, f"missing field {name!r}")
        return None
    value = body[name]
    # bool is an int in Python; the protocol's ints are not booleans.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise AgentError(ErrorCode.MALFORMED, f"field {name!r} must be {kind.__name__}")
    return value


def request_id(frames: list[bytes]) -> int | None:
    """The request's id when it can be read at all (for echoing in an error reply)."""
    try:
        body = json.loads(frames[0].decode("utf-8")) if len(frames) == 1 else None
    except (UnicodeDecodeError, ValueError):
        return None
    value = body.get("id") if isinstance(body, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_request(frames: list[bytes]) -> Request:
    """Checks size, shape, JSON and field types and the version (not the token)."""
    if len(frames) != 1:
        raise AgentError(ErrorCode.MALFORMED, f"a request is one frame, got {len(frames)}")
    if len(frames[0]) > MAX_REQUEST:
        raise AgentError(
            ErrorCode.TOO_LARGE, f"request of {len(frames[0])} bytes exceeds {MAX_REQUEST}"
        )
    try:
        body = json.loads(frames[0].decode("utf-8"))
    except UnicodeDecodeError:
        raise AgentError(ErrorCode.MALFORMED, "request is not UTF-8") from None
    except ValueError as exc:
        raise AgentError(ErrorCode.MALFORMED, f"request is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise AgentError(ErrorCode.MALFORMED, "request is not a JSON object")
    version = _field(body, "protocol", int)
    if version != PROTOCOL:
        raise AgentError(
            ErrorCode.VERSION, f"protocol {version} is not supported; this agent speaks {PROTOCOL}"
        )
    rid = _field(body, "id", int, required=False)
    token = _field(body, "token", str, required=False)
    op = _field(body, "op", str)
    return Request(rid, op, token or "", body)


def reply_frames(
    rid: int | None, status: str, fields: dict[str, Any], payloads: list[bytes] | None = None
) -> list[bytes]:
    header = {"protocol": PROTOCOL, "id": rid, "status": status, **fields}
    return [json.dumps(header).encode("utf-8"), *(payloads or [])]


def error_frames(rid: int | None, error: AgentError) -> list[bytes]:
    return reply_frames(rid, "error", {"error": error.as_dict()})
