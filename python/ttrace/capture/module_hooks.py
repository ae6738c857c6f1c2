"""Forward/backward hooks on captured modules and gradient hooks on their parameters.

Hooks only copy tensors to host memory (on CUDA asynchronously, `host_copy`) and queue
them: no collectives, no synchronization with the device or other ranks, no change to
values (except the reference's deliberate perturbation).
Every key is bound when the forward runs, so gradients arriving later, interleaved with
other micro-batches' forwards (1F1B), are still filed under their own micro-batch.

- forward inputs: copied in the pre-hook (before the module can modify them): positional
  tensors under their position, keyword tensors under their keyword
  (`forward_input/hidden_states`), as Hugging Face models pass them;
- input gradients: the pre-hook hands the module an alias (`view_as`) of each input that
  needs a gradient; a tensor hook on the alias sees exactly this module's contribution to
  the input's gradient (`grad_input`), even when the input also feeds a residual path;
- outputs and their gradients: the post-hook copies each output and hooks it;
- parameter gradients: a post-accumulate-grad hook per parameter; the k-th accumulation in
  an iteration belongs to micro-batch k (backwards run in micro-batch order on every stage).
  A wrapper that swaps a module's parameters for others during forward (FSDP2's unsharded
  parameters) gets the hook on the swapped-in parameter too, filed under the original's name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ttrace.bundle import Placement, TensorKey

from .annotate import param_annotation_of
from .backward_order import BackwardOrder
from .call_log import RECOMPUTE_SUFFIX, CallLog, CallRecord, in_backward, input_key
from .capture_state import CaptureState
from .checkpoint_modes import outside_selective_checkpoint
from .compiled_regions import hook_module
from .dtensor_placement import is_dtensor
from .errors import TracerError
from .host_buffers import HostBuffers
from .host_copy import to_host
from .inference import CallEntry, Decision, PlacementInference
from .layout import Layout
from .layout_note import LayoutNote
from .module_table import ModuleTable
from .naming import ModuleNames
from .perturbation import Perturbation
from .phase_times import PhaseTimes

log = logging.getLogger("ttrace.capture")

Sink = Callable[[TensorKey, torch.Tensor, Placement | None, LayoutNote | None], None]


def flatten(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [y for x in value for y in flatten(x)]
    if isinstance(value, dict):
        return [y for k in value for y in flatten(value[k])]
    return [value]


def substitute(value: Any, by_position: dict[int, Any], start: list[int] | None = None) -> Any:
    """`value` with its flattened leaves (numbered as `flatten` numbers them) replaced."""
    counter = start if start is not None else [0]
    if isinstance(value, tuple | list):
        items = [substitute(x, by_position, counter) for x in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return type(value)((k, substitute(v, by_position, counter)) for k, v in value.items())
    position = counter[0]
    counter[0] += 1
    return by_position.get(position, value)


def stored_scale(
    inference: PlacementInference,
    kind: str,
    placement: Placement,
    shape: tuple[int, ...],
    param_scale: float = 1.0,
) -> float:
    """The factor capture applies to a per-rank tensor of `kind` before storing it, so that
    partial sums add up to the reference when the program averages gradients: every
    activation gradient, a per-rank loss (a 0-d partial-sum output), and a `param_grad` by
    the `param_scale` its placement came with. The replay agent scales by the same rule.

    The gradient of a 0-d output is not scaled: that output (a per-rank loss) is stored
    scaled down as a partial sum, and the reference's loss is the sum of those partials, so
    its gradient with respect to each partial is the unscaled one (1 for the loss)."""
    if kind == "output_grad" and len(shape) == 0:
        return 1.0
    if kind in ("input_grad", "output_grad"):
        return inference.grad_scale
    if kind == "forward_output" and placement.partial_index is not None and len(shape) == 0:
        return inference.grad_scale
    if kind == "param_grad":
        return param_scale
    return 1.0


def replicated_over_tp(t: torch.Tensor, decided: Decision) -> bool:
    if is_dtensor(t):
        return all(type(p).__name__ == "Replicate" for p in t.placements)
    # A replica by fallback (with a note) proves nothing about the outputs.
    return decided.layout is not None and decided.layout.mode == "replica" and decided.note is None


@dataclass
class InputSlot:
    """One tensor input of one forward call: copied in the pre-hook, placed in the
    post-hook (when the call tree below the module is known), its gradient placed alike."""

    index: int | str
    live: torch.Tensor
    host: torch.Tensor | None
    primary: bool
    decided: Decision | None = None


@dataclass
class CallFrame:
    """One forward call in progress: the call it is (None: a recompute that matched no
    call, not captured), whether it is a recompute, and its inputs."""

    record: CallRecord | None
    recompute: bool
    slots: list[InputSlot]

    def name(self) -> str:
        assert self.record is not None
        return self.record.name + (RECOMPUTE_SUFFIX if self.recompute else "")


class ModuleHooks:
    def __init__(
        self,
        names: ModuleNames,
        inference: PlacementInference,
        state: CaptureState,
        sink: Sink,
        table: ModuleTable,
        perturbation: Perturbation,
        buffers: HostBuffers | None = None,
        phases: PhaseTimes | None = None,
    ) -> None:
        self.names = names
        self.buffers = buffers  # host copies come from this pool (the writer gives back)
        self.phases = phases if phases is not None else PhaseTimes()
        self.inference = inference
        self.state = state
        self.sink = sink
        self.table = table
        self.perturbation = perturbation
        self.handles: list[Any] = []
        self._inputs: dict[nn.Module, list[CallFrame]] = {}
        self.call_log = CallLog()
        self.grad_count: dict[nn.Parameter, int] = {}
        self.owner: dict[nn.Parameter, tuple[nn.Module, str]] = {}
        # parameters swapped in during forward (FSDP2 unsharded) -> the original parameter
        self.swapped: dict[torch.Tensor, nn.Parameter] = {}
        self._slot_owner: dict[tuple[nn.Module, str], nn.Parameter] = {}
        self._has_swap: set[nn.Parameter] = set()
        self._members: dict[nn.Module, list[nn.Module]] = {}
        self._unmatched: set[str] = set()
        # Pipelining stages whose backward may run out of micro-batch order (set by the
        # Tracer, `backward_order`); None: each parameter's n-th gradient is micro-batch n.
        self.backward_order: BackwardOrder | None = None

    # --- installation -----------------------------------------------------------------------

    def install(
        self,
        roots: list[nn.Module],
        selected: list[nn.Module],
        inside: set[nn.Module] | None = None,
        containers: set[nn.Module] | None = None,
    ) -> None:
        """Hooks on `selected` modules; those `inside` a compiled region get none (their
        parameters are still captured), nor do pipeline stage `containers`
        (`pipeline_stages`): their activations are not the reference module's."""
        calls = self.inference.calls
        inside = inside or set()
        # A compiled region lists the selected modules inside it in the manifest (their
        # parameters are captured) when it runs.
        self._members = {
            m: [x for x in m.modules() if x in inside and x in selected]
            for m in selected
            if m not in inside and any(x in inside for x in m.children())
        }
        for index, root in enumerate(roots):
            self.handles.append(
                root.register_forward_pre_hook(self._root_pre(index), with_kwargs=True)
            )
        for module in self.names.names:
            if module not in inside:
                self.handles += hook_module(
                    module, lambda m, a, k: calls.enter(m), lambda m, a, o: calls.exit(m)
                )
        for module in selected:
            if module not in inside and module not in (containers or ()):
                self.handles += hook_module(module, self._pre, self._post)
            for pname, p in module.named_parameters(recurse=False):
                if p in self.owner:
                    continue  # a parameter shared by two modules keeps its first owner
                self.owner[p] = (module, pname)
                self._slot_owner[(module, pname)] = p
                if p.requires_grad:
                    self.handles.append(p.register_post_accumulate_grad_hook(self._grad_hook))

    def reset_calls(self) -> None:
        """A new step: calls of the previous one are neither counted nor recomputed, and
        calls whose post-hook never ran (an exception) are forgotten."""
        self.call_log.reset()
        self._inputs.clear()
        if self.backward_order is not None:
            self.backward_order.reset()

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles.clear()

    def _adopt_swapped(self, module: nn.Module) -> None:
        """Hook parameters a wrapper swapped in for this forward (FSDP2 unsharded ones)."""
        for pname, p in module.named_parameters(recurse=False):
            if p in self.owner or p in self.swapped:
                continue
            original = self._slot_owner.get((module, pname))
            if original is None:
                continue
            self.swapped[p] = original
            self._has_swap.add(original)
            if p.requires_grad:
                self.handles.append(p.register_post_accumulate_grad_hook(self._grad_hook))

    # --- helpers ----------------------------------------------------------------------------

    def host(self, t: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        """The private host copy of `t` (times `scale`) that is handed to the sink."""
        start = time.perf_counter()
        host = to_host(t, scale, self.buffers)
        self.phases.add("host_copy", time.perf_counter() - start)
        return host

    def activation(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, Placement, Decision]:
        """`PlacementInference.activation`, timed."""
        start = time.perf_counter()
        placed = self.inference.activation(*args, **kwargs)
        self.phases.add("inference", time.perf_counter() - start)
        return placed

    def queue(self, key: TensorKey, data: torch.Tensor, placement: Any, note: Any) -> None:
        """Hand a host copy to the sink (the writer), timed: it blocks over the memory cap."""
        start = time.perf_counter()
        self.sink(key, data, placement, note)
        self.phases.add("queue", time.perf_counter() - start)

    def _key(self, mb: int, module_name: str, kind: str, index: Any) -> TensorKey:
        s = self.state
        return TensorKey(s.variant, s.iteration, mb, module_name, kind, str(index))

    def _guard(self, what: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            with outside_selective_checkpoint():
                return fn()
        except TracerError:
            raise
        except Exception as exc:
            raise TracerError(f"ttrace: capturing {what} failed: {exc}") from exc
        finally:
            self.phases.add("hooks", time.perf_counter() - start)

    def param_name(self, p: torch.Tensor) -> tuple[nn.Module, str, str]:
        """(owner module, canonical module name, parameter name); an `alias` annotation
        (a tied copy) names the tensor it copies."""
        p = self.swapped.get(p, p)
        module, pname = self.owner[p]
        ann = param_annotation_of(p)
        root = self.names.name(module) if self.names.is_root(module) else "model"
        alias = ann.module_and_param(root) if ann is not None else None
        if alias is not None:
            return module, alias[0], alias[1]
        return module, self.names.name(module), pname

    def emit_param(self, p: torch.Tensor, tensor: torch.Tensor, kind: str, mb: int) -> None:
        module, mname, pname = self.param_name(p)
        start = time.perf_counter()
        local, placement, scale = self.inference.parameter(tensor, p, module, kind)
        self.phases.add("inference", time.perf_counter() - start)
        factor = stored_scale(self.inference, kind, placement, tuple(local.shape), scale)
        data = self.host(local, factor)
        path = self.names.paths.get(module, mname)
        note = self.inference.param_note(p, f"{path}.{pname}" if path else pname)
        self.queue(self._key(mb, mname, kind, pname), data, placement, note)

    # --- hooks ------------------------------------------------------------------------------

    def _root_pre(self, chunk: int) -> Callable:
        def hook(module: nn.Module, args: Any, kwargs: Any) -> None:
            s = self.state
            if not s.in_step:
                return
            self.inference.facts.observe_root(args, kwargs)
            count = s.mb_counter.get(chunk, 0)
            s.mb_counter[chunk] = count + 1
            s.forward_mb = s.explicit_mb if s.explicit_mb is not None else count
            self._parameters_once(chunk)

        return hook

    def _parameters_once(self, chunk: int | None) -> None:
        """The chunk's parameters, once per step: at its root's first forward, or at the
        first module that runs when the loop calls submodules without the root's forward
        (Lightning's `training_step` on one device)."""
        s = self.state
        key = (s.variant, s.iteration)
        if chunk is None or (key, chunk) in s.params_done:
            return
        if s.wants(-1) and s.wants_kind("parameter"):
            s.params_done.add((key, chunk))
            self._guard("parameters", lambda: self._capture_parameters(chunk))

    def _capture_parameters(self, chunk: int) -> None:
        for p, (module, _) in self.owner.items():
            if self.names.root_of.get(module) == chunk:
                self.emit_param(p, p, "parameter", -1)

    def _pre(self, module: nn.Module, args: tuple, kwargs: dict[str, Any]) -> Any:
        s = self.state
        recompute = in_backward()
        if not s.in_step or not (recompute or s.wants(s.forward_mb)):
            return None
        return self._guard(
            f"forward inputs of {self.names.name(module)}",
            lambda: self._pre_impl(module, args, kwargs, recompute),
        )

    def _begin_call(
        self, module: nn.Module, items: list[tuple[int | str, Any]], recompute: bool
    ) -> CallFrame:
        """The frame of this call: a new call of the micro-batch, or the recompute of one."""
        s = self.state
        first = next((a for _, a in items if isinstance(a, torch.Tensor)), None)
        key = input_key(first)
        if recompute:
            nested = self.call_log.recomputing()
            record = self.call_log.begin_recompute(module, key)
            name = self.names.name(module)
            if record is None and not nested and name not in self._unmatched:
                # Said once: a forward during backward that recomputes no call of this step
                # (its input is not one a forward of the step was given).
                self._unmatched.add(name)
                log.warning(
                    "ttrace: %s ran during backward but matches no forward call of the "
                    "step: that forward is not captured",
                    name,
                )
            if record is not None and not s.wants(record.mb):
                record = None
        else:
            step = (s.variant, s.iteration)
            record = self.call_log.begin(module, self.names.name(module), step, s.forward_mb, key)
            record.hooked = torch.is_grad_enabled()
        frame = CallFrame(record, recompute, [])
        self._inputs.setdefault(module, []).append(frame)
        return frame

    def _pre_impl(
        self, module: nn.Module, args: tuple, kwargs: dict[str, Any], recompute: bool
    ) -> Any:
        s = self.state
        if not recompute:
            self._parameters_once(self.names.root_of.get(module))
        items = [(i, a) for i, a in enumerate(args)] + list(kwargs.items())
        frame = self._begin_call(module, items, recompute)
        if frame.record is None:
            return None
        record = frame.record
        chunk = self.names.root_of.get(module, 0)
        self.table.record(frame.name(), type(module).__name__, chunk)
        for member in self._members.get(module, []) if record.name == frame.name() else []:
            region = self.names.name(module)
            self.table.record(self.names.name(member), type(member).__name__, chunk, region)
        self._adopt_swapped(module)
        # Reentrant checkpointing runs the first forward without grad: the recompute's graph
        # is the one whose gradients flow, filed under the original call.
        hook_grads = not recompute or not record.hooked
        new_args, new_kwargs = list(args), dict(kwargs)
        replaced = False
        for index, a in items:
            if not isinstance(a, torch.Tensor):
                continue
            # A recompute's inputs too: where it first departs from the original is the
            # module whose recomputed output diverges from a clean recomputed input.
            host = self.host(a) if s.wants_kind("forward_input") else None
            slot = InputSlot(index, a, host, not frame.slots)
            frame.slots.append(slot)
            grads = a.requires_grad and a.is_floating_point() and torch.is_grad_enabled()
            if grads and s.wants_kind("input_grad"):
                # The recompute gets the alias too: non-reentrant checkpointing checks that
                # it rebuilds the same graph.
                alias = a.view_as(a)
                if a in self.inference.produced:
                    self.inference.alias(alias, a)
                if hook_grads:
                    alias.register_hook(self._input_grad_hook(module, slot, record))
                if isinstance(index, int):
                    new_args[index] = alias
                else:
                    new_kwargs[index] = alias
                replaced = True
        return (tuple(new_args), new_kwargs) if replaced else None

    def _post(self, module: nn.Module, args: tuple, output: Any) -> Any:
        stack = self._inputs.get(module)
        if not self.state.in_step or not stack:
            return None
        frame = stack.pop()
        if frame.recompute:
            self.call_log.end_recompute()
        else:
            self.call_log.end(module)
        if frame.record is None:
            return None
        return self._guard(
            f"forward outputs of {frame.name()}", lambda: self._post_impl(module, output, frame)
        )

    def _place_inputs(self, module: nn.Module, frame: CallFrame) -> CallEntry | None:
        """Place this call's inputs (and write them); what they say about the outputs."""
        slots = frame.slots
        assert frame.record is not None
        name, mb = frame.name(), frame.record.mb
        primary: tuple[Layout | None, tuple[int, ...]] | None = None
        replicated = seq_only = bool(slots)
        for slot in slots:
            _, placement, decided = self.activation(
                module, "in", slot.index, slot.live, primary=slot.primary
            )
            slot.decided = decided
            replica = replicated_over_tp(slot.live, decided)
            replicated = replicated and replica
            seq_only = seq_only and (replica or self.inference.seq_or_replica(slot.live, decided))
            if slot.primary:
                primary = (decided.layout, tuple(slot.live.shape))
            if slot.host is not None:
                stored = slot.host.to_local() if is_dtensor(slot.host) else slot.host
                key = self._key(mb, name, "forward_input", slot.index)
                self.queue(key, stored, placement, decided.note)
        if primary is None:
            return None
        return CallEntry(primary[0], primary[1], replicated, seq_only)

    def _post_impl(self, module: nn.Module, output: Any, frame: CallFrame) -> Any:
        s = self.state
        record = frame.record
        assert record is not None
        name, mb = frame.name(), record.mb
        hook_grads = not frame.recompute or not record.hooked
        s.note(mb)
        replaced = None
        # By module: every call (and the recompute) of the perturbed module is perturbed, once
        # its output's placement is known (below): each rank perturbs its shard by its part
        # of the global field.
        perturb = (
            s.variant_index > 0
            and isinstance(output, torch.Tensor)
            and output.is_floating_point()
            and self.perturbation.targets(self.names.name(module), self.inference.info.pp_rank == 0)
        )
        entry = self._place_inputs(module, frame)
        first = True
        aliases: dict[int, torch.Tensor] = {}
        for i, t in enumerate(flatten(output)):
            if not isinstance(t, torch.Tensor):
                continue
            if t.is_leaf and t.requires_grad and torch.is_grad_enabled():
                # A leaf handed out as an output (Megatron's skip-bias-add returns its bias
                # Parameter): a hook on the leaf would outlive this call and fire at every
                # later backward. The consumer gets an alias instead, hooked once.
                t = aliases[i] = t.view_as(t)
            local, placement, decided = self.activation(
                module, "out", i, t, primary=first, entry=entry
            )
            if perturb:  # the one tensor output
                t = local = replaced = self._perturbed(t, local, placement, mb)
                aliases.pop(i, None)
            first = False
            self.inference.remember(t, decided.layout)
            if s.wants_kind("forward_output"):
                # Scaled: a per-rank loss.
                factor = stored_scale(self.inference, "forward_output", placement, tuple(t.shape))
                data = self.host(local, factor)
                self.queue(self._key(mb, name, "forward_output", i), data, placement, decided.note)
            # Under no_grad (reentrant recompute's first forward) only a leaf handed out
            # still requires grad: its gradient belongs to the recompute, hooked there.
            grads = t.requires_grad and torch.is_grad_enabled()
            if grads and s.wants_kind("output_grad") and hook_grads:
                t.register_hook(self._output_grad_hook(module, i, record, decided))
        if aliases:
            return substitute(output, aliases)
        return replaced

    def _perturbed(
        self, t: torch.Tensor, local: torch.Tensor, placement: Placement, mb: int
    ) -> torch.Tensor:
        """The perturbed variant's output: `t` (this rank's shard, placed by `placement`)
        times ``1 + eps * u`` with u the global field's values at its elements."""
        if local is not t:
            # A DTensor or a routed (expert) output: its local piece is not the output.
            raise TracerError(
                f"ttrace: the perturbed module {self.perturbation.module} returns a "
                f"{type(t).__name__} whose shard is not the tensor itself; name another module "
                "to perturb with Perturbation(module=...)"
            )
        s = self.state
        return self.perturbation.apply(t, s.variant_index, s.iteration, mb, placement)

    def _emit_grad(
        self,
        key: TensorKey,
        module: nn.Module,
        direction: str,
        index: Any,
        grad: torch.Tensor,
        decided: Decision | None,
    ) -> None:
        local, placement, done = self.activation(
            module, direction, index, grad, gradient=True, decided=decided
        )
        factor = stored_scale(self.inference, key.kind, placement, tuple(grad.shape))
        data = self.host(local, factor)
        self.queue(key, data, placement, done.note)

    def _output_grad_hook(
        self, module: nn.Module, index: int, record: CallRecord, decided: Decision
    ) -> Callable:
        s = self.state
        key = self._key(record.mb, record.name, "output_grad", index)

        def hook(grad: torch.Tensor) -> None:
            if s.in_step:
                self._guard(
                    key.path, lambda: self._emit_grad(key, module, "out", index, grad, decided)
                )

        return hook

    def _input_grad_hook(self, module: nn.Module, slot: InputSlot, record: CallRecord) -> Callable:
        s = self.state
        key = self._key(record.mb, record.name, "input_grad", slot.index)

        def hook(grad: torch.Tensor) -> None:
            if s.in_step:
                self._guard(
                    key.path,
                    lambda: self._emit_grad(key, module, "in", slot.index, grad, slot.decided),
                )

        return hook

    def _grad_hook(self, p: torch.Tensor) -> None:
        s = self.state
        if not s.in_step:
            return
        if p in self._has_swap:
            # FSDP2 also runs the sharded parameter's hooks after the reduce-scatter; that
            # gradient is already reduced (main_grad captures it), the partial came from the
            # swapped-in unsharded parameter.
            return
        logical = self.swapped.get(p, p)
        count = self.grad_count.get(logical, 0)
        self.grad_count[logical] = count + 1
        if not s.wants_kind("param_grad") or p.grad is None:
            return
        entries = [(count, p.grad)]
        if self.backward_order is not None:
            chunk = self.names.root_of.get(self.owner[logical][0], 0)
            entries = self.backward_order.accumulated(logical, chunk, count, p.grad)
        for mb, grad in entries:
            if s.wants(mb):
                self._guard(
                    f"param_grad of {self.param_name(p)[1]}",
                    lambda mb=mb, grad=grad: self.emit_param(p, grad, "param_grad", mb),
                )

    def chunk_parameters(self, chunk: int) -> list[tuple[nn.Parameter, torch.Tensor]]:
        """The captured parameters of model chunk `chunk` (by root index), each with the
        tensor its gradient accumulates on: itself, or the unsharded parameter FSDP2 swapped
        in for this step's forwards."""
        swapped_in = {original: p for p, original in self.swapped.items()}
        return [
            (p, swapped_in.get(p, p))
            for p, (m, _) in self.owner.items()
            if self.names.root_of.get(m) == chunk
        ]
