"""A `replay` request's fields, checked (docs/protocol.md, "replay")."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from .errors import AgentError, ErrorCode

PHASES = ("forward", "backward", "step")


@dataclass(frozen=True)
class ReplayRequest:
    module: str
    iteration: int
    micro_batch: int
    phase: str
    variants: tuple[str, ...]

    @classmethod
    def from_body(
        cls, body: dict[str, Any], modules: Collection[str], variants: Collection[str]
    ) -> ReplayRequest:
        def need(name: str, kind: type, default: Any = None) -> Any:
            value = body.get(name, default)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise AgentError(ErrorCode.MALFORMED, f"field {name!r} must be {kind.__name__}")
            return value

        phase = need("phase", str)
        if phase not in PHASES:
            raise AgentError(ErrorCode.MALFORMED, f"phase {phase!r} is not one of {PHASES}")
        module = need("module", str)
        if not (phase == "step" and module == "") and module not in modules:
            raise AgentError(ErrorCode.UNKNOWN_MODULE, f"no captured module {module!r}")
        micro_batch = need("micro_batch", int, 0 if phase == "step" else None)
        iteration = need("iteration", int)
        if iteration < 0 or micro_batch < 0:
            raise AgentError(ErrorCode.MALFORMED, "iteration and micro_batch must be >= 0")
        wanted = need("variants", list, ["nominal"])
        if not wanted or not all(isinstance(v, str) for v in wanted):
            raise AgentError(ErrorCode.MALFORMED, "field 'variants' must be a list of strings")
        for v in wanted:
            if v not in variants:
                raise AgentError(
                    ErrorCode.NO_REFERENCE_TENSOR, f"the reference has no variant {v!r}"
                )
        return cls(module, iteration, micro_batch, phase, tuple(dict.fromkeys(wanted)))

    @classmethod
    def from_json(cls, data: bytes) -> ReplayRequest:
        """The form rank 0 broadcasts (already checked there)."""
        body = json.loads(data.decode("utf-8"))
        return cls(
            str(body["module"]),
            int(body["iteration"]),
            int(body["micro_batch"]),
            str(body["phase"]),
            tuple(str(v) for v in body["variants"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "iteration": self.iteration,
            "micro_batch": self.micro_batch,
            "phase": self.phase,
            "variants": list(self.variants),
        }
