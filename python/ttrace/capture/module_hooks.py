"""Forward/backward hooks on captured modules and gradient hooks on their parameters.

Hooks only copy tensors to host memory and queue them: no collectives, no synchronization
with other ranks, no change to values (except the reference's deliberate perturbation).
Every key is bound when the forward runs, so gradients arriving later, interleaved with
other micro-batches' forwards (1F1B), are still filed under their own micro-batch.

- forward inputs: copied in the pre-hook (before the module can modify them);
- input gradients: the pre-hook hands the module an alias (`view_as`) of each input that
  needs a gradient; a tensor hook on the alias sees exactly this module's contribution to
  the input's gradient (`grad_input`), even when the input also feeds a residual path;
- outputs and their gradients: the post-hook copies each output and hooks it;
- parameter gradients: a post-accumulate-grad hook per parameter; the k-th accumulation in
  an iteration belongs to micro-batch k (backwards run in micro-batch order on every stage).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ttrace.bundle import Placement, TensorKey

from .annotate import param_annotation_of
from .capture_state import CaptureState
from .errors import TracerError
from .inference import PlacementInference
from .module_table import ModuleTable
from .naming import ROOT_NAME, ModuleNames
from .perturbation import Perturbation

Sink = Callable[[TensorKey, torch.Tensor, Placement | None], None]


def to_host(t: torch.Tensor) -> torch.Tensor:
    """A private host copy (the original may be updated in place later)."""
    t = t.detach()
    return t.to("cpu", copy=True) if t.device.type != "cpu" else t.clone()


def flatten(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [y for x in value for y in flatten(x)]
    if isinstance(value, dict):
        return [y for k in value for y in flatten(value[k])]
    return [value]


class ModuleHooks:
    def __init__(
        self,
        names: ModuleNames,
        inference: PlacementInference,
        state: CaptureState,
        sink: Sink,
        table: ModuleTable,
        perturbation: Perturbation,
    ) -> None:
        self.names = names
        self.inference = inference
        self.state = state
        self.sink = sink
        self.table = table
        self.perturbation = perturbation
        self.handles: list[Any] = []
        self._inputs: dict[nn.Module, list[list[tuple[int, torch.Tensor]]]] = {}
        self.grad_count: dict[nn.Parameter, int] = {}
        self.owner: dict[nn.Parameter, tuple[nn.Module, str]] = {}

    # --- installation -----------------------------------------------------------------------

    def install(self, roots: list[nn.Module], selected: list[nn.Module]) -> None:
        calls = self.inference.calls
        for index, root in enumerate(roots):
            self.handles.append(root.register_forward_pre_hook(self._root_pre(index)))
        for module in self.names.names:
            self.handles.append(module.register_forward_pre_hook(lambda m, a: calls.enter(m)))
            self.handles.append(module.register_forward_hook(lambda m, a, o: calls.exit(m)))
        for module in selected:
            self.handles.append(module.register_forward_pre_hook(self._pre))
            self.handles.append(module.register_forward_hook(self._post))
            for pname, p in module.named_parameters(recurse=False):
                if p in self.owner:
                    continue  # a parameter shared by two modules keeps its first owner
                self.owner[p] = (module, pname)
                if p.requires_grad:
                    self.handles.append(p.register_post_accumulate_grad_hook(self._grad_hook))

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles.clear()

    # --- helpers ----------------------------------------------------------------------------

    def _key(self, mb: int, module_name: str, kind: str, index: Any) -> TensorKey:
        s = self.state
        return TensorKey(s.variant, s.iteration, mb, module_name, kind, str(index))

    def _guard(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except TracerError:
            raise
        except Exception as exc:
            raise TracerError(f"ttrace: capturing {what} failed: {exc}") from exc

    def param_name(self, p: nn.Parameter) -> tuple[nn.Module, str, str]:
        """(owner module, canonical module name, parameter name); an `alias` annotation
        (a tied copy) names the tensor it copies."""
        module, pname = self.owner[p]
        ann = param_annotation_of(p)
        alias = ann.module_and_param(ROOT_NAME) if ann is not None else None
        if alias is not None:
            return module, alias[0], alias[1]
        return module, self.names.name(module), pname

    def emit_param(self, p: nn.Parameter, tensor: torch.Tensor, kind: str, mb: int) -> None:
        module, mname, pname = self.param_name(p)
        local, placement, scale = self.inference.parameter(tensor, p, module, kind)
        data = to_host(local)
        if kind == "param_grad" and scale != 1.0:
            data.mul_(scale)
        self.sink(self._key(mb, mname, kind, pname), data, placement)

    # --- hooks ------------------------------------------------------------------------------

    def _root_pre(self, chunk: int) -> Callable:
        def hook(module: nn.Module, args: Any) -> None:
            s = self.state
            if not s.in_step:
                return
            count = s.mb_counter.get(chunk, 0)
            s.mb_counter[chunk] = count + 1
            s.forward_mb = s.explicit_mb if s.explicit_mb is not None else count
            key = (s.variant, s.iteration)
            if s.wants(-1) and s.wants_kind("parameter") and (key, chunk) not in s.params_done:
                s.params_done.add((key, chunk))
                self._guard("parameters", lambda: self._capture_parameters(chunk))

        return hook

    def _capture_parameters(self, chunk: int) -> None:
        for p, (module, _) in self.owner.items():
            if self.names.root_of.get(module) == chunk:
                self.emit_param(p, p, "parameter", -1)

    def _active(self) -> bool:
        s = self.state
        return s.in_step and s.wants(s.forward_mb)

    def _pre(self, module: nn.Module, args: tuple) -> tuple | None:
        if not self._active():
            return None
        return self._guard(
            f"forward inputs of {self.names.name(module)}", lambda: self._pre_impl(module, args)
        )

    def _pre_impl(self, module: nn.Module, args: tuple) -> tuple | None:
        s = self.state
        name = self.names.name(module)
        self.table.record(name, type(module).__name__, self.names.root_of.get(module, 0))
        saved: list[tuple[int, torch.Tensor]] = []
        new_args = list(args)
        replaced = False
        for i, a in enumerate(args):
            if not isinstance(a, torch.Tensor):
                continue
            if s.wants_kind("forward_input"):
                saved.append((i, to_host(a)))
            if a.requires_grad and a.is_floating_point() and s.wants_kind("input_grad"):
                alias = a.view_as(a)
                alias.register_hook(self._grad_tensor_hook(module, "in", i, s.forward_mb))
                new_args[i] = alias
                replaced = True
        self._inputs.setdefault(module, []).append(saved)
        return tuple(new_args) if replaced else None

    def _post(self, module: nn.Module, args: tuple, output: Any) -> Any:
        if not self._active():
            return None
        return self._guard(
            f"forward outputs of {self.names.name(module)}", lambda: self._post_impl(module, output)
        )

    def _post_impl(self, module: nn.Module, output: Any) -> Any:
        s = self.state
        name = self.names.name(module)
        mb = s.forward_mb
        s.note(mb)
        replaced = None
        if s.variant_index > 0 and isinstance(output, torch.Tensor) and output.is_floating_point():
            if self.perturbation.module is None:
                self.perturbation.module = name
            if self.perturbation.module == name:
                output = self.perturbation.apply(output, s.variant_index, s.iteration, mb)
                replaced = output
        stack = self._inputs.get(module)
        for i, host in stack.pop() if stack else []:
            local, placement = self.inference.activation(module, "in", i, host)
            self.sink(self._key(mb, name, "forward_input", i), local, placement)
        for i, t in enumerate(flatten(output)):
            if not isinstance(t, torch.Tensor):
                continue
            if s.wants_kind("forward_output"):
                local, placement = self.inference.activation(module, "out", i, t)
                self.sink(self._key(mb, name, "forward_output", i), to_host(local), placement)
            if t.requires_grad and s.wants_kind("output_grad"):
                t.register_hook(self._grad_tensor_hook(module, "out", i, mb))
        return replaced

    def _grad_tensor_hook(self, module: nn.Module, direction: str, index: int, mb: int) -> Callable:
        s = self.state
        key = self._key(
            mb, self.names.name(module), "input_grad" if direction == "in" else "output_grad", index
        )

        def hook(grad: torch.Tensor) -> None:
            def emit() -> None:
                local, placement = self.inference.activation(
                    module, direction, index, grad, gradient=True
                )
                self.sink(key, to_host(local), placement)

            if s.in_step:
                self._guard(key.path, emit)

        return hook

    def _grad_hook(self, p: nn.Parameter) -> None:
        s = self.state
        if not s.in_step:
            return
        mb = self.grad_count.get(p, 0)
        self.grad_count[p] = mb + 1
        if s.wants(mb) and s.wants_kind("param_grad") and p.grad is not None:
            self._guard(
                f"param_grad of {self.param_name(p)[1]}",
                lambda: self.emit_param(p, p.grad, "param_grad", mb),
            )
