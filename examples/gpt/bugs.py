"""Hook for deliberately injected silent bugs (the bug zoo).

`--inject NAME` on the command line adds NAME to `ParallelConfig.bugs`, which reaches every
layer through `LayerContext.bugs`. A layer asks `ctx.has_bug("name")` at the place where the
bug would live. No bugs are implemented yet: every name is accepted so that a later task can
add them one at a time; `KNOWN` lists the names with an implementation.
"""

from __future__ import annotations

KNOWN: dict[str, str] = {}


def check(names: set[str]) -> None:
    unknown = sorted(n for n in names if n not in KNOWN)
    if unknown:
        # Accepted but inert until implemented: say so loudly rather than pretend.
        print(f"warning: injected bug(s) {unknown} have no implementation yet; run is correct")
