"""Every random generator a training step may draw from, saved and restored together.

A perturbed variant must draw the same dropout masks as the nominal one, on every device:
the CPU generator, each CUDA device's default generator (all of them, not only the current
one: a model may span devices), the default generators of other accelerators torch knows
(XPU, MPS), `torch.Generator` objects that modules hold as attributes (a dropout layer
given its own generator), and the named states of Megatron-core's RNG tracker (its
attention dropout draws from the tensor-parallel state, forked in and out of the device
generator: restoring the device generator alone leaves that state advanced, and a perturbed
variant then draws other attention masks).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn


def _accelerators() -> list[Any]:
    """Device modules (torch.cuda, torch.xpu, ...) whose generators are in use right now."""
    found = []
    for name in ("cuda", "xpu"):
        module = getattr(torch, name, None)
        is_initialized = getattr(module, "is_initialized", None)
        if module is not None and callable(is_initialized) and is_initialized():
            found.append(module)
    return found


def module_generators(roots: Sequence[nn.Module]) -> list[torch.Generator]:
    seen: set[int] = set()
    out: list[torch.Generator] = []
    for root in roots:
        for module in root.modules():
            for value in vars(module).values():
                if isinstance(value, torch.Generator) and id(value) not in seen:
                    seen.add(id(value))
                    out.append(value)
    return out


def _copy_state(state: Any) -> Any:
    """A tracker's state: a byte tensor, or a generator (graph-safe trackers)."""
    if isinstance(state, torch.Tensor):
        return state.clone()
    if isinstance(state, torch.Generator):
        return state.clone_state()
    return state


def _megatron_tracker() -> Any:
    """Megatron-core's RNG tracker where the job has initialized one (never imported here)."""
    random = sys.modules.get("megatron.core.tensor_parallel.random")
    if random is None or not getattr(random, "_CUDA_RNG_STATE_TRACKER_INITIALIZED", False):
        return None
    tracker = getattr(random, "_CUDA_RNG_STATE_TRACKER", None)
    has_states = hasattr(tracker, "get_states") and hasattr(tracker, "set_states")
    return tracker if has_states else None


class GeneratorStates:
    def __init__(self, roots: Sequence[nn.Module] = ()) -> None:
        self.cpu = torch.get_rng_state()
        self.devices = [(m, m.get_rng_state_all()) for m in _accelerators()]
        mps = getattr(torch, "mps", None)
        self.mps = (
            mps.get_rng_state() if mps is not None and torch.backends.mps.is_available() else None
        )
        self.generators = [(g, g.get_state()) for g in module_generators(roots)]
        self.tracker = _megatron_tracker()
        self.tracked = (
            {name: _copy_state(v) for name, v in self.tracker.get_states().items()}
            if self.tracker is not None
            else {}
        )

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        for module, states in self.devices:
            module.set_rng_state_all(states)
        if self.mps is not None:
            torch.mps.set_rng_state(self.mps)
        for generator, state in self.generators:
            generator.set_state(state)
        if self.tracker is not None:  # copies again: the tracker replaces or advances them
            self.tracker.set_states({name: _copy_state(v) for name, v in self.tracked.items()})
