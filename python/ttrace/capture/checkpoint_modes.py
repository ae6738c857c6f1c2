"""The capture's own tensor work kept out of selective activation checkpointing.

torch's selective checkpointing (`create_selective_checkpoint_contexts`, torchtitan's default
`SelectiveAC`) runs the checkpointed forward under a dispatch mode that stores the outputs of
the ops its policy saves, and the recompute under one that hands them back by op and count.
A capture hook's own ops (the host copy's `empty`, `copy_`, aliases of outputs) ran inside
both modes would be counted as the model's: the recompute then asks for a stored `empty`
that the forward never saved and fails ("encountered during backward but not found in
storage"). Run outside those two modes, in the forward and the recompute alike, the hooks'
ops are invisible to the policy and the model's op sequence is the one it recorded.
"""

from __future__ import annotations

import contextlib
from typing import Any

from torch.utils import checkpoint
from torch.utils._python_dispatch import _disable_current_modes, _get_current_dispatch_mode_stack

_SELECTIVE_MODES = tuple(
    getattr(checkpoint, name)
    for name in ("_CachingTorchDispatchMode", "_CachedTorchDispatchMode")
    if hasattr(checkpoint, name)
)


def outside_selective_checkpoint() -> contextlib.AbstractContextManager[Any]:
    """A context without the dispatch modes of selective checkpointing, when they are on."""
    stack = _get_current_dispatch_mode_stack()
    if _SELECTIVE_MODES and any(isinstance(mode, _SELECTIVE_MODES) for mode in stack):
        return _disable_current_modes()
    return contextlib.nullcontext()
