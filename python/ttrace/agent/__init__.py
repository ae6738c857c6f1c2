"""The localize replay agent: serves replays of captured modules inside the candidate job
(docs/protocol.md, docs/localize.md). Needs pyzmq."""

from .agent import serve
from .errors import AgentError, ErrorCode
from .wire import PROTOCOL

__all__ = ["PROTOCOL", "AgentError", "ErrorCode", "serve"]
