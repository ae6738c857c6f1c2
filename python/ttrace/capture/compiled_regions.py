"""`torch.compile`d modules: captured at the compiled region's boundary, never inside it.

A hook inside a compiled region is traced by Dynamo: it breaks the graph (an error under
``fullgraph=True``) or fails on the capture's own bookkeeping. So per-block compilation
(torchtitan's default) is captured where the region starts and ends, and at every module
outside the regions:

- ``torch.compile(block)`` returns an `OptimizedModule` that holds the block as
  ``_orig_mod``; the wrapper's own hooks run eagerly around the compiled call, so it gets
  the capture hooks, under the block's name (``_orig_mod`` adds no name part);
- ``block.compile()`` compiles the block's own call, hooks included: its hooks are run by
  an eager wrapper around the compiled call instead (`hook_module`).

Modules inside a region get no forward hooks; their parameters are still captured
(parameters, gradients, the optimizer step run outside the compiled graph). A compiled root
(the whole model) leaves nothing to capture but its own boundary and, with
``fullgraph=True``, cannot run a hook at all: the tracer refuses it before the first step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from .errors import TracerError

ORIG_MOD = "_orig_mod"
PreHook = Callable[[nn.Module, tuple, dict[str, Any]], Any]
PostHook = Callable[[nn.Module, tuple, Any], Any]


def is_optimized_module(module: nn.Module) -> bool:
    """`torch.compile(module)`'s wrapper (recognized without importing Dynamo)."""
    return type(module).__name__ == "OptimizedModule" and isinstance(
        getattr(module, ORIG_MOD, None), nn.Module
    )


def compiled_in_place(module: nn.Module) -> bool:
    """`module.compile()` was called: its call, hooks included, is compiled."""
    return getattr(module, "_compiled_call_impl", None) is not None


def is_compiled(module: nn.Module) -> bool:
    return is_optimized_module(module) or compiled_in_place(module)


def fullgraph(module: nn.Module) -> bool:
    """Whether a compiled module was compiled with ``fullgraph=True`` (Dynamo keeps the flag
    on its optimize context: the wrapper's `dynamo_ctx`, or a cell of the compiled call)."""
    context = getattr(module, "dynamo_ctx", None)
    if context is None:
        impl = getattr(module, "_compiled_call_impl", None)
        cells = getattr(impl, "__closure__", None) or ()
        context = next(
            (c.cell_contents for c in cells if hasattr(c.cell_contents, "fullgraph")), None
        )
    return bool(getattr(context, "fullgraph", False))


def check_roots(roots: list[nn.Module]) -> None:
    """Refuse a compiled root before the first step, saying what to change."""
    for index, root in enumerate(roots):
        if not is_compiled(root):
            continue
        what = "model" if len(roots) == 1 else f"model chunk {index}"
        # Name the call the user wrote: the wrapper or the in-place `model.compile()`.
        call = "model.compile(" if compiled_in_place(root) else "torch.compile(model"
        sep = "" if compiled_in_place(root) else ", "
        how = f"{call}{sep}fullgraph=True)" if fullgraph(root) else f"{call})"
        raise TracerError(
            f"ttrace: the {what} ({type(root).__name__}) is compiled as a whole ({how}): "
            "capture hooks cannot run inside a compiled graph"
            + (" (fullgraph=True makes each of them an error)" if fullgraph(root) else "")
            + ". Compile the blocks instead and give the tracer the uncompiled model: "
            "`for block in model.layers: block.compile(fullgraph=True)` (or "
            "`model.layers[i] = torch.compile(block)`); the capture then runs at each "
            "compiled block's boundary and at every module outside the blocks"
        )


def inside_regions(roots: list[nn.Module]) -> set[nn.Module]:
    """Modules strictly inside a compiled region (an `OptimizedModule`'s ``_orig_mod``
    itself included): they get no forward hooks."""
    inside: set[nn.Module] = set()
    for root in roots:
        for module in root.modules():
            if module in inside or not is_compiled(module):
                continue
            for inner in module.modules():
                if inner is not module:
                    inside.add(inner)
    return inside


class _Handle:
    def __init__(self, hooks: _CompiledCallHooks, pre: PreHook | None, post: PostHook | None):
        self.hooks, self.pre, self.post = hooks, pre, post

    def remove(self) -> None:
        self.hooks.discard(self.pre, self.post)


class _CompiledCallHooks:
    """The hooks of one module compiled in place, run eagerly around its compiled call."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.inner = module._compiled_call_impl
        self.pres: list[PreHook] = []
        self.posts: list[PostHook] = []
        module._compiled_call_impl = self.call

    def call(self, *args: Any, **kwargs: Any) -> Any:
        for pre in list(self.pres):
            replaced = pre(self.module, args, kwargs)
            if replaced is not None:
                args, kwargs = replaced
        output = self.inner(*args, **kwargs)
        for post in list(self.posts):
            replaced = post(self.module, args, output)
            if replaced is not None:
                output = replaced
        return output

    def discard(self, pre: PreHook | None, post: PostHook | None) -> None:
        if pre is not None and pre in self.pres:
            self.pres.remove(pre)
        if post is not None and post in self.posts:
            self.posts.remove(post)
        if not self.pres and not self.posts:
            self.module._compiled_call_impl = self.inner
            _WRAPPED.pop(self.module, None)


_WRAPPED: dict[nn.Module, _CompiledCallHooks] = {}


def hook_module(module: nn.Module, pre: PreHook | None, post: PostHook | None) -> list[Any]:
    """Forward hooks (pre with keyword arguments, as `register_forward_pre_hook(...,
    with_kwargs=True)`); for a module compiled in place, run around its compiled call."""
    if not compiled_in_place(module):
        handles = []
        if pre is not None:
            handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        if post is not None:
            handles.append(module.register_forward_hook(post))
        return handles
    hooks = _WRAPPED.get(module)
    if hooks is None:
        hooks = _WRAPPED[module] = _CompiledCallHooks(module)
    if pre is not None:
        hooks.pres.append(pre)
    if post is not None:
        hooks.posts.append(post)
    return [_Handle(hooks, pre, post)]
