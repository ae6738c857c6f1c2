"""Save and restore the job's state around a replay: parameters, buffers, gradients (`.grad`
and Megatron-style `.main_grad`), optimizer state, and every random generator (Python,
numpy, torch CPU, torch CUDA on every device), so that serving never changes the job."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from torch import nn

_MISSING = object()


def _clone(t: Any) -> Any:
    return t.detach().clone() if isinstance(t, torch.Tensor) else t


class RngState:
    def __init__(self) -> None:
        self.python = random.getstate()
        self.numpy = np.random.get_state()
        self.cpu = torch.get_rng_state()
        cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        self.cuda = torch.cuda.get_rng_state_all() if cuda else None

    def restore(self) -> None:
        random.setstate(self.python)
        np.random.set_state(self.numpy)
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)

    def same_as(self, other: RngState) -> bool:
        """Did no torch generator advance between the two states?"""
        if not torch.equal(self.cpu, other.cpu):
            return False
        if self.cuda is None or other.cuda is None:
            return self.cuda is None and other.cuda is None
        return all(torch.equal(a, b) for a, b in zip(self.cuda, other.cuda, strict=True))


class StateGuard:
    """`with StateGuard(modules, optimizer):` restores everything on exit (also on error)."""

    def __init__(self, modules: Iterable[nn.Module], optimizer: Any = None) -> None:
        # main_grad: the object itself and a copy of its values. It may be a view of an
        # optimizer's flat gradient buffer (Megatron, ZeRO): restoring the values in place
        # keeps the view, and so the buffer, as the job left them.
        self.params: dict[nn.Parameter, tuple[torch.Tensor, Any, Any, Any]] = {}
        self.buffers: list[tuple[torch.Tensor, torch.Tensor]] = []
        seen: set[int] = set()
        for m in modules:
            for p in m.parameters():
                if p not in self.params:
                    main = getattr(p, "main_grad", _MISSING)
                    self.params[p] = (p.detach().clone(), _clone(p.grad), main, _clone(main))
            for b in m.buffers():
                if id(b) not in seen:
                    seen.add(id(b))
                    self.buffers.append((b, b.detach().clone()))
        self.optimizer = optimizer
        self.opt_state = copy.deepcopy(optimizer.state_dict()) if optimizer is not None else None
        self.rng = RngState()

    def __enter__(self) -> StateGuard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()

    def restore(self) -> None:
        with torch.no_grad():
            for p, (data, grad, main, main_values) in self.params.items():
                p.copy_(data)
                p.grad = grad
                if main is _MISSING:
                    if hasattr(p, "main_grad"):
                        delattr(p, "main_grad")
                    continue
                if isinstance(main, torch.Tensor):
                    main.copy_(main_values)
                p.main_grad = main
            for b, saved in self.buffers:
                b.copy_(saved)
        if self.optimizer is not None:
            # load_state_dict may adopt the given tensors: hand it a copy, keep ours intact.
            self.optimizer.load_state_dict(copy.deepcopy(self.opt_state))
        self.rng.restore()
