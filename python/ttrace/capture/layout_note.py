"""Why a tensor got the placement it has, when inference fell back or could not decide.

Written with the tensor as two optional string attributes of its dataset (`layout_note`,
`annotate_hint`; see docs/bundle-format.md) so that a report can say, per invalid tensor,
what capture tried and which `ttc.annotate(...)` line would fix it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LayoutNote:
    note: str  # what was tried, e.g. "inferred replica over tp: ...; local [4, 16, 32]"
    hint: str = ""  # the `ttc.annotate(...)` line that would fix it

    def attrs(self) -> dict[str, str]:
        out = {"layout_note": self.note}
        if self.hint:
            out["annotate_hint"] = self.hint
        return out


def shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"
