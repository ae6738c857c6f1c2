"""The activation one pipeline stage hands to the next, captured on both sides.

Stage k's last layer `L` computes an activation the schedule sends to stage k + 1, whose
first layer consumes what arrived. Both sides file it under one record, `<L>@handoff`: the
sender's value as its `forward_input/0`, the value the receiver's chunk was given as its
`forward_output/0`; backwards, the gradient the receiver computed for it as its
`output_grad/0` and the one the sender's backward was seeded with as its `input_grad/0`. The
comparison reads the reference's `<L>` `forward_output/0` and `output_grad/0` for all four
(`docs/bundle-format.md`), so a hand-off that delivers another value than was sent (a stale
buffer, another micro-batch's activation) diverges at its output with a clean input: the
divergence is introduced at the stage boundary, named.

Read from the job's own pipeline contract, no annotation:
- Megatron-core: a model chunk with `pre_process=False` receives its input through
  `set_input_tensor` (the schedule calls it before each forward); one with
  `post_process=False` returns the activation the schedule sends;
- torch.distributed.pipelining: a stage after the first receives its module's first
  positional input, a stage before the last sends its module's output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .naming import unwrap
from .pipeline_stages import ChunkLayers, chunk_layers

if TYPE_CHECKING:
    from .module_hooks import ModuleHooks

HANDOFF_SUFFIX = "@handoff"
HANDOFF_TYPE = "PipelineHandoff"


def handoff_name(layer: str) -> str:
    return f"{layer}{HANDOFF_SUFFIX}"


class PipelineHandoff:
    """Hooks on the model chunks of one pipeline rank (Megatron-core's convention)."""

    def __init__(self, hooks: ModuleHooks, roots: list[nn.Module], stages: list[Any]) -> None:
        self.hooks = hooks
        self.handles: list[Any] = []
        self._restore: list[Callable[[], None]] = []
        self._received: dict[int, torch.Tensor] = {}
        # Receive buffers are reused from step to step (torch.distributed.pipelining): a
        # buffer's gradient hook of an earlier micro-batch is removed before the next is set.
        self._grad_hooks: dict[int, Any] = {}
        stage_of = {id(unwrap(s.submod)): s for s in stages}
        for chunk, root in enumerate(roots):
            layers = chunk_layers(hooks.names, chunk)
            if layers.first is None:
                continue
            stage = stage_of.get(id(root))
            if stage is not None:
                receives, sends = not stage.is_first, not stage.is_last
            else:
                receives = getattr(root, "pre_process", True) is False
                sends = getattr(root, "post_process", True) is False
            if receives and stage is None and hasattr(root, "set_input_tensor"):
                self._receive(chunk, root, layers)
            elif receives and stage is not None:
                self.handles.append(
                    root.register_forward_pre_hook(self._first_input(chunk), with_kwargs=True)
                )
                self._watch(chunk, root, layers)
            if sends:
                self.handles.append(root.register_forward_hook(self._send_hook(chunk, layers)))

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles.clear()
        for undo in self._restore:
            undo()
        self._restore.clear()

    def _receive(self, chunk: int, root: nn.Module, layers: ChunkLayers) -> None:
        original = root.set_input_tensor
        received = self._received

        def set_input_tensor(input_tensor: Any) -> Any:
            first = input_tensor[0] if isinstance(input_tensor, list | tuple) else input_tensor
            if isinstance(first, torch.Tensor):
                received[chunk] = first
            return original(input_tensor)

        root.set_input_tensor = set_input_tensor  # type: ignore[method-assign]
        self._restore.append(lambda: root.__dict__.pop("set_input_tensor", None))
        self._watch(chunk, root, layers)

    def _first_input(self, chunk: int) -> Callable:
        def hook(module: nn.Module, args: Any, kwargs: Any) -> None:
            if args and isinstance(args[0], torch.Tensor):
                self._received[chunk] = args[0]

        return hook

    def _watch(self, chunk: int, root: nn.Module, layers: ChunkLayers) -> None:
        self.handles.append(
            root.register_forward_pre_hook(self._receive_hook(chunk, layers), with_kwargs=True)
        )

    def _receive_hook(self, chunk: int, layers: ChunkLayers) -> Callable:
        assert layers.first is not None
        name = handoff_name(layers.name(layers.first - 1))
        consumer = layers.layers[layers.first]

        def hook(module: nn.Module, args: Any, kwargs: Any) -> None:
            tensor = self._received.pop(chunk, None)
            s = self.hooks.state
            if tensor is None or not s.in_step or not s.wants(s.forward_mb):
                return
            self.hooks.table.record(name, HANDOFF_TYPE, chunk)
            self.hooks._guard(
                f"pipeline input of {name}",
                lambda: self._file(name, consumer, "in", tensor, "forward_output", "output_grad"),
            )

        return hook

    def _send_hook(self, chunk: int, layers: ChunkLayers) -> Callable:
        assert layers.last is not None
        name = handoff_name(layers.name(layers.last))
        producer = layers.layers[layers.last]

        def hook(module: nn.Module, args: Any, output: Any) -> None:
            s = self.hooks.state
            if not isinstance(output, torch.Tensor) or not s.in_step or not s.wants(s.forward_mb):
                return
            self.hooks.table.record(name, HANDOFF_TYPE, chunk)
            self.hooks._guard(
                f"pipeline output of {name}",
                lambda: self._file(name, producer, "out", output, "forward_input", "input_grad"),
            )

        return hook

    def _file(
        self,
        name: str,
        layer: nn.Module,
        direction: str,
        tensor: torch.Tensor,
        value_kind: str,
        grad_kind: str,
    ) -> None:
        """File `tensor` as `value_kind/0` of `name`, placed as `layer`'s input or output
        would be, and hook its gradient as `grad_kind/0`."""
        hooks, s = self.hooks, self.hooks.state
        mb = s.forward_mb
        s.note(mb)
        local, placement, decided = hooks.activation(layer, direction, 0, tensor, primary=True)
        if s.wants_kind(value_kind):
            key = hooks._key(mb, name, value_kind, 0)
            hooks.queue(key, hooks.host(local), placement, decided.note)
        if tensor.requires_grad and s.wants_kind(grad_kind):
            key = hooks._key(mb, name, grad_kind, 0)

            def on_grad(grad: torch.Tensor) -> None:
                self._grad_hooks.pop(id(tensor)).remove()  # once: the buffer may be reused
                if s.in_step:
                    hooks._guard(
                        key.path,
                        lambda: hooks._emit_grad(key, layer, direction, 0, grad, decided),
                    )

            stale = self._grad_hooks.pop(id(tensor), None)
            if stale is not None:
                stale.remove()
            self._grad_hooks[id(tensor)] = tensor.register_hook(on_grad)
