"""Error codes of the localize protocol (docs/protocol.md, "Replies")."""

from __future__ import annotations

from enum import Enum


class ErrorCode(str, Enum):
    MALFORMED = "malformed"
    TOO_LARGE = "too_large"
    VERSION = "version"
    UNAUTHENTICATED = "unauthenticated"
    UNKNOWN_OP = "unknown_op"
    UNKNOWN_MODULE = "unknown_module"
    NO_REFERENCE_TENSOR = "no_reference_tensor"
    NOT_REPLAYABLE = "not_replayable"
    REPLAY_FAILED = "replay_failed"
    # A relaunch smaller than the job lacks a group this replay needs (relaunch_layout.py).
    LAYOUT_TOO_SMALL = "layout_too_small"


class AgentError(Exception):
    """A request the agent answers with an error reply (never a crash)."""

    def __init__(self, code: ErrorCode, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # A typed refusal (`replay_rows.Refusal`), worded alike by every client; "" for none.
        self.reason = reason

    def as_dict(self) -> dict[str, str]:
        out = {"code": self.code.value, "message": self.message}
        if self.reason:
            out["reason"] = self.reason
        return out
