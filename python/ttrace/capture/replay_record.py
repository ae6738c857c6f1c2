"""What a relaunch from the bundles (`ttrace serve`) needs beyond the tensors, recorded in
the candidate's manifest under `replay` (docs/bundle-format.md):

- per rank: how each module was called (`call_record`), the digest of every module buffer
  as the job left it, and the iteration of the optimizer's first step;
- once: how the job was launched (`launch_record`) and the code fingerprint of every rank's
  classes (`code_fingerprint`).

Buffers are recorded by digest, not value: a relaunch builds them again, and a buffer the
training changed (running statistics, amax histories) then differs from its digest, so the
modules that hold it are refused rather than replayed with the wrong state.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from .call_log import called_module
from .call_record import encode_template
from .code_fingerprint import code_fingerprint, merge_fingerprints
from .grad_views import locate_view
from .launch_record import launch_record

log = logging.getLogger("ttrace.capture")


def buffer_digest(t: torch.Tensor) -> str:
    # A DTensor buffer (torchtitan's rotary table under TP) is digested by this rank's
    # shard: that is what a relaunch in the same layout builds again, and a tensor
    # subclass has no bytes of its own to hash.
    to_local = getattr(t, "to_local", None)
    local = to_local() if callable(to_local) else t
    data = local.detach().to("cpu").contiguous()
    raw = data.reshape(-1).view(torch.uint8) if data.numel() else torch.empty(0, dtype=torch.uint8)
    head = f"{data.dtype}{list(data.shape)}".encode()
    return hashlib.sha256(head + raw.numpy().tobytes()).hexdigest()


def module_buffers(names: Any, selected: Sequence[nn.Module]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for module in selected:
        digests = {n: buffer_digest(b) for n, b in module.named_buffers(recurse=False)}
        if digests:
            out[names.name(module)] = digests
    return out


def grad_owners(tracer: Any) -> dict[str, Any]:
    """Where a `main_grad` buffer may live: the optimizer, the model roots."""
    owners: dict[str, Any] = {f"root:{i}": r for i, r in enumerate(tracer.roots)}
    if tracer.optimizer is not None:
        owners = {"optimizer": tracer.optimizer, **owners}
    return owners


def main_grads(tracer: Any) -> dict[str, dict[str, Any]]:
    """{"module.param": {"kind": "none" | "tensor" | "view", ...}} for parameters that carry
    a Megatron-style `main_grad` (the job's optimizer reads it; a relaunch makes it again,
    as a view of the same buffer where it was one, `grad_views`)."""
    out: dict[str, dict[str, Any]] = {}
    owners = grad_owners(tracer)
    for p, (module, pname) in tracer.hooks.owner.items():
        if not hasattr(p, "main_grad"):
            continue
        main = p.main_grad
        entry: dict[str, Any] = {"kind": "none" if main is None else "tensor"}
        if isinstance(main, torch.Tensor):
            view = locate_view(main, owners)
            if view is not None:
                entry = {"kind": "view", **view}
        out[f"{tracer.names.name(module)}.{pname}"] = entry
    return out


def rank_replay_record(tracer: Any) -> dict[str, Any] | None:
    """This rank's part, gathered to rank 0 by `Tracer.close()`; None (and a warning) when
    it cannot be made: relaunching serves localize only and must never fail a capture."""
    try:
        return _rank_record(tracer)
    except Exception as exc:
        log.warning("ttrace: no record for `ttrace serve` on rank %d: %r", tracer.rank, exc)
        return None


def _rank_record(tracer: Any) -> dict[str, Any]:
    by_name = {n: m for m, n in tracer.names.names.items()}
    templates: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    calls: dict[str, list[list[int]]] = {}
    recorder = tracer.recorder
    # Later calls (`<module>@call<k>`) too: a relaunch replays each call with its own
    # arguments, and their non-tensor arguments name attributes of the module that runs.
    for name, per_call in [*recorder.templates.items(), *recorder.later_calls.items()]:
        for (iteration, mb), template in sorted(per_call.items()):
            encoded = encode_template(template, by_name.get(called_module(name)))
            text = json.dumps(encoded, sort_keys=True)
            if text not in seen:
                seen[text] = len(templates)
                templates.append(encoded)
            calls.setdefault(name, []).append([iteration, mb, seen[text]])
    snap = tracer.opt_snapshot
    return {
        "rank": tracer.rank,
        "calls": calls,
        "templates": templates,
        "buffers": module_buffers(tracer.names, tracer.selected),
        "main_grad": main_grads(tracer),
        "first_step": snap.iteration if snap is not None else None,
        "code": code_fingerprint(tracer.roots),
    }


def merge_replay_records(parts: Sequence[dict[str, Any] | None], world_size: int) -> dict | None:
    """The manifest's `replay` section (rank 0); None when a rank sent nothing."""
    if any(p is None for p in parts):
        return None
    ranks = sorted((p for p in parts if p is not None), key=lambda p: p["rank"])
    return {
        "launch": launch_record(world_size),
        "code": merge_fingerprints(p["code"] for p in ranks),
        "ranks": [{k: v for k, v in p.items() if k != "code"} for p in ranks],
    }
