"""Which record a replay request names, and the typed reasons a replay is refused.

Besides a module's own name (call 0 of the micro-batch), capture files three kinds of rows a
client may ask to replay (docs/capture.md): ``<module>@call<k>`` (the k-th call of a module
run more than once in one micro-batch), ``<call>@recompute`` (the forward activation
recompute runs again during backward) and ``<layer>@handoff`` (what one pipeline stage sent
and the next received). Each maps to the module that runs, the call whose template and
inputs are replayed, and the name its results are filed under.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

HANDOFF_SUFFIX = "@handoff"
RECOMPUTE_SUFFIX = "@recompute"
_CALL = re.compile(r"^(?P<module>.+)@call(?P<k>[1-9][0-9]*)$")


class RowKind(str, Enum):
    MODULE = "module"
    CALL = "call"
    RECOMPUTE = "recompute"
    HANDOFF = "handoff"


class Refusal(str, Enum):
    """Why a row cannot be replayed, as a code every client words the same way (the core's
    `replay/refusal_reason.h` holds the words). Sent as the error's `reason`."""

    STOCHASTIC = "stochastic"  # the module draws random numbers
    RECOMPUTE_STOCHASTIC = "recompute_stochastic"  # ... and the row is its recompute
    RECOMPUTE_GRADIENTS = "recompute_gradients"  # a recompute row has no gradients of its own
    CALL_NOT_RECORDED = "call_not_recorded"  # no template of that call on this rank
    HANDOFF_UNRECORDED = "handoff_unrecorded"  # a side of the hand-off was not captured
    PARTIAL_INTEGER_INPUT = "partial_integer_input"  # integer input held as partial sums


@dataclass(frozen=True)
class ReplayRow:
    name: str  # as requested: results are filed under it
    kind: RowKind
    call: str  # the call replayed: its template and the reference's inputs
    module: str  # the canonical module that runs (for a hand-off: the sending layer)

    @classmethod
    def parse(cls, name: str) -> ReplayRow:
        if name.endswith(HANDOFF_SUFFIX) and len(name) > len(HANDOFF_SUFFIX):
            layer = name[: -len(HANDOFF_SUFFIX)]
            return cls(name, RowKind.HANDOFF, layer, layer)
        kind = RowKind.MODULE
        call = name
        if name.endswith(RECOMPUTE_SUFFIX) and len(name) > len(RECOMPUTE_SUFFIX):
            kind, call = RowKind.RECOMPUTE, name[: -len(RECOMPUTE_SUFFIX)]
        match = _CALL.match(call)
        if match is None:
            return cls(name, kind, call, call)
        return cls(name, RowKind.CALL if kind == RowKind.MODULE else kind, call, match["module"])

    @property
    def call_index(self) -> int:
        match = _CALL.match(self.call)
        return int(match["k"]) if match else 0


def special_rows(bundle: Path, calls: dict[str, str]) -> dict[str, str]:
    """Hand-off and recompute rows of the candidate's manifest with why they cannot be
    replayed ("" when they can), for `hello`: a hand-off always can be asked (the replay
    refuses with a typed reason when a side is missing); a recompute as its call, except
    that a stochastic call's recompute is asked too, and refused with its own reason."""
    try:
        manifest = json.loads((Path(bundle) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no manifest to list rows from: `hello` says each was not recorded
    out: dict[str, str] = {}
    for entry in manifest.get("modules", []):
        row = ReplayRow.parse(str(entry.get("name", "")))
        if row.kind == RowKind.HANDOFF:
            out[row.name] = ""
        elif row.kind == RowKind.RECOMPUTE and row.call in calls:
            why = calls[row.call]
            out[row.name] = "" if why.startswith("stochastic") else why
    return out
