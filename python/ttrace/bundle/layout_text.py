"""A job's parallel layout as one phrase: "TP2 x DP2, 4 ranks".

The same words as the core's `parallelLayoutText` (core/src/io/parallel_layout_text.cpp), which
the diff report, `ttrace localize` and the explorer use: what the agent and `ttrace serve` print
about a layout must read exactly as the client's lines beside it. Both are held to one table of
cases (tests/common/parallel_layout_cases.json).
"""

from __future__ import annotations

from collections.abc import Mapping

# The order users name layouts in (Megatron's TP x CP x PP x DP, experts last).
ORDER = ("tp", "cp", "pp", "vpp", "dp", "ep")
# Only ASCII letters are upper-cased, as the core does.
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def ranks_text(ranks: int) -> str:
    """ "1 rank", "4 ranks"."""
    return f"{ranks} rank" if ranks == 1 else f"{ranks} ranks"


def parallel_layout_text(parallel: Mapping[str, int], world_size: int) -> str:
    """The sizes above 1 in the order of `ORDER`, then any other dimension by name (sorted),
    and the rank count; "4 ranks" when no size is above 1, "single process" on one rank."""
    unknown = sorted(name for name in parallel if name not in ORDER)
    names = [name for name in ORDER if name in parallel] + unknown
    sizes = [f"{name.translate(_UPPER)}{int(parallel[name])}" for name in names]
    sizes = [text for name, text in zip(names, sizes, strict=True) if int(parallel[name]) > 1]
    if not sizes:
        return "single process" if world_size <= 1 else ranks_text(world_size)
    return f"{' x '.join(sizes)}, {ranks_text(world_size)}"
