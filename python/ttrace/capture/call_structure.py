"""Which submodules a module calls, in first-call order.

A composite module (an attention block, a transformer layer) has no parallel attributes of
its own; its input is laid out like its first callee's input and its output like its last
callee's output. Recording the call tree at run time (rather than trusting registration
order) gets this right for any forward().
"""

from __future__ import annotations

from torch import nn


class CallStructure:
    def __init__(self) -> None:
        self.children: dict[nn.Module, list[nn.Module]] = {}
        self._stack: list[nn.Module] = []

    def enter(self, module: nn.Module) -> None:
        if self._stack:
            calls = self.children.setdefault(self._stack[-1], [])
            if module not in calls:
                calls.append(module)
        self._stack.append(module)

    def exit(self, module: nn.Module) -> None:
        # Pop back to `module`, tolerating a callee whose post-hook never ran (an exception).
        while self._stack:
            if self._stack.pop() is module:
                break

    def callees(self, module: nn.Module) -> list[nn.Module]:
        return self.children.get(module, [])
