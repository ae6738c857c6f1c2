"""Replay mode: the candidate's script relaunched by `ttrace serve` from its bundles.

The script runs as usual up to the creation of its Tracer (process groups, model,
optimizer, whatever it loads before). There, instead of capturing, every rank takes from the
candidate bundle what the live job would have kept in memory: how each module was called
(the manifest's `replay` call templates), the optimizer's first-step iteration, the digests
of its buffers, and serves replays with the live agent's loop, protocol and token. No
training step runs: the process ends when serving ends.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import torch
import torch.distributed as dist

from ttrace.capture.call_log import called_module
from ttrace.capture.call_record import decode_template
from ttrace.capture.call_recorder import CallRecorder
from ttrace.capture.code_fingerprint import code_changes, code_fingerprint, merge_fingerprints
from ttrace.capture.dtensor_spec import job_meshes
from ttrace.capture.grad_views import make_view
from ttrace.capture.module_hooks import ModuleHooks
from ttrace.capture.optimizer_snapshot import OptimizerSnapshot
from ttrace.capture.replay_record import grad_owners, module_buffers

from .agent import serve
from .rank_channel import RankChannel
from .relaunch_layout import LayoutError, RelaunchLayout, relaunch_layout

log = logging.getLogger("ttrace.agent")
REPLAY_ENV = "TTRACE_REPLAY"
CANDIDATE_ENV = "TTRACE_REPLAY_CANDIDATE"


class RelaunchError(RuntimeError):
    """The relaunch does not match the bundle it serves (layout, missing records)."""


def _no_sink(*_: Any) -> None:
    raise RelaunchError("a relaunch captures nothing")


def _replay_section(candidate: Path) -> dict[str, Any]:
    path = candidate / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RelaunchError(f"{path}: cannot read the candidate's manifest: {exc}") from None
    if "replay" not in manifest:
        raise RelaunchError(
            f"{path} has no `replay` section (captured before ttrace recorded what a "
            "relaunch needs, or not a candidate): keep the job alive to localize instead"
        )
    return manifest


def check_layout(tracer: Any, manifest: dict[str, Any]) -> RelaunchLayout:
    """Which captured ranks this relaunched rank serves (its own, or with data parallelism
    dropped, every captured data-parallel rank of its groups: `relaunch_layout`)."""
    try:
        return relaunch_layout(
            manifest,
            tracer.rank,
            tracer.world_size,
            tracer.parallel.sizes(),
            tracer.parallel.coords(),
        )
    except LayoutError as exc:
        raise RelaunchError(str(exc)) from None


def _changed_buffers(tracer: Any, recorded: dict[str, dict[str, str]]) -> dict[str, str]:
    """{module: why} for modules (and their ancestors) whose buffers differ from the job's."""
    now = module_buffers(tracer.names, tracer.selected)
    why: dict[str, str] = {}
    for module, digests in recorded.items():
        for buf, digest in digests.items():
            if now.get(module, {}).get(buf) == digest:
                continue
            reason = (
                f"buffer {module}.{buf} differs from the captured job's (training changed it; "
                "the bundle holds its digest only): replay it in the live job"
            )
            parts = module.split(".")
            for n in range(len(parts), 0, -1):
                why.setdefault(".".join(parts[:n]), reason)
    return why


def _recorded_calls(tracer: Any, rank_record: dict[str, Any]) -> CallRecorder:
    recorder = CallRecorder(tracer.names, tracer.state)
    by_name = {n: m for m, n in tracer.names.names.items()}
    buffers = _changed_buffers(tracer, rank_record.get("buffers", {}))
    templates = rank_record["templates"]
    meshes = job_meshes(tracer.roots)
    for name, calls in rank_record["calls"].items():
        owner = called_module(name)
        module = by_name.get(owner)
        if module is None:
            continue  # hello says: no call of this module was recorded
        # Call 0 under the module's name, call k under `<module>@call<k>`, as the capture
        # kept them (bundles from before later calls were recorded hold call 0 only).
        into = recorder.templates if owner == name else recorder.later_calls
        for iteration, mb, index in calls:
            template = decode_template(templates[index], module, meshes)
            if owner in buffers:
                template.problems.insert(0, buffers[owner])
            into.setdefault(name, {})[(int(iteration), int(mb))] = template
    return recorder


def _restore_main_grads(tracer: Any, records: dict[str, dict[str, Any]]) -> None:
    """Give parameters the `main_grad` the job's training had made (its optimizer reads it;
    the step replay feeds it): None, a tensor, or a view of the same buffer of the relaunch's
    optimizer. A view that cannot be made again is a plain tensor, which a distributed
    optimizer's step replay refuses by name."""
    owners = grad_owners(tracer)
    for p, (module, pname) in tracer.hooks.owner.items():
        record = records.get(f"{tracer.names.name(module)}.{pname}")
        if record is None or hasattr(p, "main_grad"):
            continue
        kind = record.get("kind")
        view = None
        if kind == "view" and record.get("owner") in owners:
            view = make_view(p, owners[record["owner"]], record)
        if kind == "none":
            p.main_grad = None
        else:
            p.main_grad = view if view is not None else torch.zeros_like(p, dtype=torch.float32)


def _prepare(tracer: Any, optimizer: Any, candidate: Path) -> dict[str, Any]:
    manifest = _replay_section(candidate)
    layout = check_layout(tracer, manifest)
    tracer.relaunch_layout = layout
    replay = manifest["replay"]
    # The captured ranks served share their calls (data parallelism changes only the data):
    # the first one's templates, buffers and gradients stand for all.
    rank_record = next(r for r in replay["ranks"] if int(r["rank"]) == layout.served[0])
    tracer.out_dir = candidate
    tracer.hooks = ModuleHooks(
        tracer.names, tracer.inference, tracer.state, _no_sink, tracer.table, tracer.perturbation
    )
    tracer.hooks.install(tracer.roots, tracer.selected)  # names the parameters
    tracer.hooks.remove()
    _restore_main_grads(tracer, rank_record.get("main_grad", {}))
    tracer.recorder = _recorded_calls(tracer, rank_record)
    tracer.opt_snapshot = None
    if optimizer is not None:
        snap = OptimizerSnapshot(optimizer, tracer.state)
        snap.remove()
        snap.record_now(rank_record.get("first_step"))
        tracer.opt_snapshot = snap
    return replay


def _code_report(tracer: Any, recorded: dict[str, Any], channel: RankChannel) -> list[str]:
    """Rank 0: what differs between the bundle's code fingerprint and every rank's now
    (gathered as JSON bytes, like everything between the agent's ranks)."""
    mine = json.dumps(code_fingerprint(tracer.roots)).encode("utf-8")
    parts = channel.gather(mine)
    if parts is None:
        return []
    return code_changes(recorded, merge_fingerprints(json.loads(p.decode()) for p in parts))


def serve_relaunched(tracer: Any, optimizer: Any) -> NoReturn:
    """Collective: every rank of the relaunch calls it from `Tracer.__init__`."""
    channel = RankChannel()
    candidate = Path(os.environ.get(CANDIDATE_ENV, "")).resolve()
    failure: BaseException | None = None
    replay: dict[str, Any] = {}
    try:
        replay = _prepare(tracer, optimizer, candidate)
    except RelaunchError as exc:
        failure = exc
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        failure = RelaunchError(
            f"{candidate / 'manifest.json'}: its `replay` section is malformed "
            f"({type(exc).__name__}: {exc})"
        )
    except Exception as exc:
        failure = exc
    _, stop = channel.sync(0, failure is not None)
    if failure is not None or stop:
        why = failure or "another rank failed to start (see its log)"
        print(f"ttrace serve: rank {tracer.rank}: {why}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    changes = _code_report(tracer, replay.get("code", {}), channel)
    layout = tracer.relaunch_layout
    tracer.replay_hello = {"relaunch": {"code_changes": changes, "layout": layout.hello()}}
    if channel.rank == 0:
        for line in changes or ["the same as captured"]:
            print(f"ttrace serve: code: {line}", file=sys.stderr, flush=True)
        print(
            f"ttrace serve: layout: captured {layout.captured_text}, relaunched "
            f"{layout.relaunched_text}"
            + (
                f" (each rank replays {len(layout.served)} captured ranks in turn)"
                if layout.reduced
                else ""
            ),
            file=sys.stderr,
            flush=True,
        )
    serve(tracer)
    if channel.distributed:
        dist.barrier()
        dist.destroy_process_group()
    raise SystemExit(0)
