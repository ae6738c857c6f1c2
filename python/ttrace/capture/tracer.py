"""The tracer: attach to a model (and optimizer), capture tensors, write one bundle.

    tracer = Tracer(model, optimizer, "bundle/", role="candidate", iterations=[0, 1],
                    parallel=ParallelInfo(tp=2, tp_rank=..., ...))
    for _ in tracer.run_variants():   # the reference's perturbed variants; once otherwise
        for it in range(steps):
            with tracer.step(it):
                ...forward/backward over micro-batches..., optimizer.step()
    tracer.close()   # collective: rank 0 writes manifest.json

`parallel=` may be left out for DDP, FSDP2 and DTensor tensor-parallel models (read from the
model, see `parallel_detect`), Megatron-core (its DDP's process groups) and a
torch.distributed.pipelining `PipelineStage` passed as the model (`pipelining_stage`); a
`DistributedDataParallel` root is traced through the module it wraps.

Micro-batches are numbered by counting forward calls of each model chunk within the step
(or set explicitly with `tracer.micro_batch(m)`). Without `step()`, the iteration starts at
0 and advances after every optimizer step.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.utils.checkpoint
from torch import nn

from ttrace.bundle import BundleWriter, Placement, RankRecord, TensorKey, write_manifest
from ttrace.bundle.bundle_dir import clear_old_bundle, remove_status_records
from ttrace.bundle.rank_status import RankStatus

from .async_writer import AsyncWriter
from .backward_order import BackwardOrder
from .call_recorder import CallRecorder
from .call_structure import CallStructure
from .capture_estimate import CaptureEstimate
from .capture_state import CaptureState
from .clip_record import ClipRecorder
from .close_rendezvous import collective_timeout, wait_for_ranks
from .compiled_regions import check_roots, inside_regions
from .environment_record import merge_environments, safe_rank_environment
from .errors import LoopError, TracerError
from .expert_token_sets import ExpertTokenSets
from .inference import PlacementInference
from .layout_note import LayoutNote
from .module_hooks import ModuleHooks
from .module_table import ModuleTable, merge_tables
from .naming import canonical_names, unwrap
from .optimizer_config import merge_sections
from .optimizer_hooks import OptimizerHooks
from .optimizer_sharding import optimizer_sharding
from .optimizer_snapshot import OptimizerSnapshot
from .parallel_detect import resolve_parallel
from .parallel_info import ParallelInfo
from .perturbation import Perturbation, merged_entry
from .phase_times import PhaseTimes
from .pipeline_handoff import PipelineHandoff
from .pipeline_stages import stage_containers
from .pipelining_stage import stage_modules, stage_parallel, suspend_shape_inference
from .precision import precision_of
from .replay_record import merge_replay_records, rank_replay_record
from .selection import ModuleSpec, select_modules
from .token_routing import TokenRouting
from .training_snapshot import TrainingSnapshot
from .variant_run import VariantRun, run_from_environment

log = logging.getLogger("ttrace.capture")


class Tracer:
    def __init__(
        self,
        model: nn.Module | Sequence[nn.Module],
        optimizer: Any = None,
        out_dir: str | os.PathLike[str] = "ttrace-bundle",
        *,
        role: str = "candidate",
        iterations: Sequence[int] | None = None,
        micro_batches: Sequence[int] | None = None,
        modules: ModuleSpec = None,
        parallel: ParallelInfo | None = None,
        precision: str | None = None,
        perturbations: int | Perturbation = 0,
        kinds: Sequence[str] | None = None,
        model_name: str = "",
        memory_cap_bytes: int = 1 << 30,
        rank: int | None = None,
        world_size: int | None = None,
        on_write_error: str = "raise",
        collective_timeout_s: float | None = None,
        start: Mapping[str, Any] | None = None,
    ) -> None:
        if on_write_error not in ("raise", "warn"):
            raise ValueError(f"on_write_error must be 'raise' or 'warn', got {on_write_error!r}")
        # close()'s wait for the other ranks (close_rendezvous): never longer than this.
        self.collective_timeout_s = collective_timeout(collective_timeout_s)
        given = list(model) if isinstance(model, Sequence) else [model]
        # A torch.distributed.pipelining stage: its module is traced, its layout read.
        wrapped, self.stages = stage_modules(given)
        self.roots = [unwrap(m) for m in wrapped]
        check_roots(self.roots)  # a model compiled as a whole: refused before any file
        self.optimizer = optimizer
        # Started by `ttrace capture`: the launcher's role, folder and variant win.
        self.launch = run_from_environment()
        if self.launch is not None:
            role, out_dir, perturbations = _launched(self.launch, role, out_dir, perturbations)
        self.out_dir = Path(out_dir)
        self.role = role
        # Not given: the parameters' dtype says it (bf16 / fp16 models, as Megatron-core's
        # `bf16=True` builds them); recipes that differ (autocast, fp8) must say so.
        self.precision = precision or precision_of(self.roots)
        self.model_name = model_name
        # Where the run started when not from fresh weights: the checkpoint it resumed from
        # (written as the manifest's `start`, docs/bundle-format.md).
        # Not `self.start`: that is the implicit-mode method.
        self.start_point = dict(start) if start is not None else None
        self._resolve_layout(wrapped, parallel, rank, world_size)
        self._plan_capture(perturbations, iterations, micro_batches, kinds, modules)
        if os.environ.get("TTRACE_REPLAY") == "1":
            # A relaunch by `ttrace serve`: serve replays from the bundles instead of training.
            from ttrace.agent.relaunch import serve_relaunched

            serve_relaunched(self, optimizer)  # ends the process when serving ends
        self._open_writer(memory_cap_bytes, on_write_error == "raise")
        self._install_hooks()
        self._explicit_step = False
        self._variant_loop: str | None = None  # the variants loop running, if any
        self._stepped: set[tuple[str, int]] = set()
        self._per_step_from: int | None = None
        self._warned_per_step = False
        self._closed = False
        self._record: RankRecord | None = None
        atexit.register(self._atexit)

    def _resolve_layout(
        self,
        wrapped: list[nn.Module],
        parallel: ParallelInfo | None,
        rank: int | None,
        world_size: int | None,
    ) -> None:
        """This rank, the world, and the job's parallel layout (given, a pipelining stage's,
        or read from the model) with its gradient convention."""
        distributed = dist.is_available() and dist.is_initialized()
        self.rank = rank if rank is not None else (dist.get_rank() if distributed else 0)
        self.world_size = (
            world_size if world_size is not None else (dist.get_world_size() if distributed else 1)
        )
        if parallel is None:
            parallel = stage_parallel(self.stages, wrapped, self.rank, self.world_size)
        self.parallel, self.grad_convention = resolve_parallel(
            parallel, wrapped, self.rank, self.world_size
        )

    def _plan_capture(
        self,
        perturbations: int | Perturbation,
        iterations: Sequence[int] | None,
        micro_batches: Sequence[int] | None,
        kinds: Sequence[str] | None,
        modules: ModuleSpec,
    ) -> None:
        """What is captured: the perturbed variants, the steps and kinds, the modules (by
        their canonical names) and the placement inference over them."""
        self.perturbation = (
            perturbations
            if isinstance(perturbations, Perturbation)
            else Perturbation(count=int(perturbations))
        )
        if self.role == "candidate" and self.perturbation.count:
            raise ValueError("only a reference has perturbed variants")
        self.state = CaptureState(
            iterations=set(iterations) if iterations is not None else None,
            micro_batches=set(micro_batches) if micro_batches is not None else None,
            kinds=set(kinds) if kinds is not None else None,
        )
        if self.launch is not None:  # one variant for the whole run
            self.state.variant, self.state.variant_index = self.launch.variant, self.launch.index
        self.names = canonical_names(self.roots)
        self.selected = select_modules(self.names, modules)
        self.calls = CallStructure()
        self.inference = PlacementInference(self.names, self.parallel, self.calls)
        self.table = ModuleTable()

    def _open_writer(self, memory_cap_bytes: int, stop_on_write_error: bool) -> None:
        """The capture's id, its rank file writer and the status file other ranks and the
        launcher read; announces the bytes per iteration."""
        capture_id = self._start_capture()
        self.capture_id = capture_id
        writer = BundleWriter(
            self.out_dir, self.rank, self.world_size, self.role, self.parallel.coords()
        )
        status = RankStatus(
            capture_id=capture_id,
            rank=self.rank,
            world_size=self.world_size,
            role=self.role,
            coords=dict(writer.coords),
            parallel=self.parallel.sizes(),
            precision=self.precision,
            variants=self._variants_written(),
            model=self.model_name,
        )
        status.write(self.out_dir)
        # A failed write (a full disk) stops the capture; "warn" keeps the job training.
        self.writer = AsyncWriter(writer, memory_cap_bytes, status, stop_on_write_error)
        self.writer.estimate = CaptureEstimate(
            self.selected, self.state, len(status.variants), self.rank, self.optimizer is not None
        )
        self.writer.estimate.announce()  # rank 0: the bytes per iteration, before any step

    def _install_hooks(self) -> None:
        """The module, pipeline, routing, optimizer, clipping and call hooks, installed on the
        selected modules of the roots."""
        self.hooks = ModuleHooks(
            self.names,
            self.inference,
            self.state,
            self._sink,
            self.table,
            self.perturbation,
            self.writer.buffers,
            self.writer.phases,
        )
        # Compiled blocks are captured at their boundary only (`compiled_regions`).
        inside = inside_regions(self.roots)
        # Pipeline stages: the modules holding a stage's layers are not compared as the
        # reference's; what stages hand each other is (`pipeline_stages`, `pipeline_handoff`).
        containers = stage_containers(self.names, self.parallel.pp > 1)
        for module, holds in containers.items():
            chunk = self.names.root_of.get(module, 0)
            self.table.record_container(
                self.names.name(module), type(module).__name__, chunk, holds
            )
        self.hooks.install(self.roots, self.selected, inside, set(containers))
        self.handoff = (
            PipelineHandoff(self.hooks, self.roots, self.stages) if self.parallel.pp > 1 else None
        )
        self._resume_inference = suspend_shape_inference(self.stages, self.state)
        # A stage's backward may run its micro-batches in another order than its forwards
        # (ScheduleLoopedBFS): their parameter gradients are filed by micro-batch
        # (`backward_order`).
        stage_roots = {id(unwrap(stage.submod)) for stage in self.stages}
        chunks = {i for i, root in enumerate(self.roots) if id(root) in stage_roots}
        if chunks:
            self.hooks.backward_order = BackwardOrder(
                self.state, chunks, self.hooks.chunk_parameters
            )
            self.hooks.backward_order.install(self.roots)
        # Mixture-of-experts layers: which reference token each dispatched row is.
        self.routing = TokenRouting(self.names, self.inference, self.state)
        self.routing.install()
        self.inference.routing = self.routing
        # Experts run on each data-parallel rank's own tokens: their rows in the reference.
        self.expert_rows = ExpertTokenSets(
            self.names,
            self.parallel,
            self.state,
            self.capture_id,
            self.collective_timeout_s,
            self.routing.rows,
        )
        self.expert_rows.install()
        self.opt_hooks = (
            OptimizerHooks(self.optimizer, self.hooks, self.state, self._after_optimizer_step)
            if self.optimizer is not None
            else None
        )
        # The global gradient norm and clip coefficient, where the framework computes them.
        self.clip = ClipRecorder(self.state)
        self.clip.install()
        # For the replay agent (ttrace.agent): how each module was called, and the optimizer's
        # state before its first step.
        self.recorder = CallRecorder(self.names, self.state)
        self.recorder.install([m for m in self.selected if m not in inside])
        self.opt_snapshot = (
            OptimizerSnapshot(self.optimizer, self.state) if self.optimizer is not None else None
        )

    def _collective(self) -> bool:
        return (
            self.world_size > 1
            and dist.is_available()
            and dist.is_initialized()
            and dist.get_world_size() == self.world_size
        )

    def _start_capture(self) -> str:
        """Replace whatever an earlier capture left in the folder; this capture's id.

        In a distributed job rank 0 clears the folder before any rank creates a file (the
        broadcast of the id orders them), so no stale file of an old, larger or killed
        capture survives. Ranks simulated in one process clear only their own files."""
        if not self._collective():
            clear_old_bundle(self.out_dir, self.rank, self.world_size, sole_owner=self.rank == 0)
            return uuid.uuid4().hex
        if self.rank == 0:
            clear_old_bundle(self.out_dir, 0, self.world_size, sole_owner=True)
        # The id travels as 16 raw bytes (no pickle), on the device the backend needs.
        device = (
            torch.device("cuda", torch.cuda.current_device())
            if dist.get_backend() == "nccl"
            else torch.device("cpu")
        )
        raw = bytearray(uuid.uuid4().bytes if self.rank == 0 else bytes(16))
        box = torch.frombuffer(raw, dtype=torch.uint8).to(device)
        dist.broadcast(box, src=0)
        return bytes(box.cpu().tolist()).hex()

    # --- the training loop's side -----------------------------------------------------------

    @contextlib.contextmanager
    def step(self, iteration: int, micro_batch: int | None = None) -> Iterator[Tracer]:
        """Capture one training step (forward/backward of its micro-batches and the
        optimizer step) as `iteration`. With `micro_batch`, everything inside is that
        micro-batch."""
        s = self.state
        self._check_step(int(iteration))
        s.iteration, s.in_step, self._explicit_step = int(iteration), True, True
        s.explicit_mb = micro_batch
        s.reset_counters()
        self.hooks.grad_count.clear()
        self.hooks.reset_calls()
        try:
            # Recompute runs to the end, so that every recomputed module's output is
            # compared (torch's early stop would skip the modules after the last saved
            # tensor); the values are the same either way.
            with torch.utils.checkpoint.set_checkpoint_early_stop(False):
                yield self
        except BaseException:
            # Keep what was captured before the failure: drain it to disk, then re-raise.
            with contextlib.suppress(Exception):
                self.writer.flush()
            raise
        else:
            if s.wants(-1):
                self.writer.step_done(s.variant, s.iteration)
        finally:
            s.in_step, self._explicit_step, s.explicit_mb = False, False, None

    @contextlib.contextmanager
    def micro_batch(self, micro_batch: int) -> Iterator[None]:
        s = self.state
        previous = s.explicit_mb, s.forward_mb
        # Also the forward's number now: a loop that calls the model's submodules without
        # its root's forward (Lightning's `training_step` on one device) has no root call to
        # set it.
        s.explicit_mb = s.forward_mb = int(micro_batch)
        try:
            yield
        finally:
            s.explicit_mb, s.forward_mb = previous

    def variants(self, iteration: int) -> Iterator[str]:
        """Reference only, per-step perturbation: yields `perturbed-1..K` then `nominal`.
        Each perturbed variant starts from the same model, optimizer and RNG state, which is
        restored afterwards, so only the nominal variant's step carries on into the next
        iteration. Its floors miss the round-off earlier steps left in the parameters
        (`docs/tolerance.md`): for more than one captured iteration use `run_variants()`."""
        if self._per_step_from is None:
            self._per_step_from = int(iteration)
        elif int(iteration) != self._per_step_from and not self._warned_per_step:
            self._warned_per_step = True
            log.warning(
                "ttrace: per-step variants at iteration %d: its floors miss the round-off "
                "earlier steps left in the parameters and can raise false alarms; wrap the "
                "whole loop in `for _ in tracer.run_variants():` instead",
                iteration,
            )
        yield from self._each_variant("variants(it)")

    def run_variants(self) -> Iterator[str]:
        """Reference only, whole-run perturbation (the documented reference loop): yields
        `perturbed-1..K` then `nominal`; the loop body runs *every* captured iteration. Each
        variant starts from the model, optimizer and RNG state at this call, so a perturbed
        variant carries its own round-off from step to step exactly as a distributed
        candidate does, and later iterations' floors include the parameter error earlier
        steps left behind."""
        yield from self._each_variant("run_variants()")

    def _each_variant(self, loop: str) -> Iterator[str]:
        """`perturbed-1..K` then `nominal`, each starting from the state at this call (the
        snapshot is restored after every perturbed variant, so one snapshot serves all)."""
        if self.state.in_step:
            raise LoopError(
                "variants_inside_step",
                f"tracer.{loop} was called inside `with tracer.step(...)`: every variant "
                "would be filed as a further micro-batch of one step. Put the variants loop "
                "outside: `for _ in tracer.run_variants():` around the loop over iterations, "
                "`with tracer.step(it):` inside it",
            )
        if self._variant_loop is not None:
            raise LoopError(
                "nested_variants",
                f"tracer.{loop} inside tracer.{self._variant_loop}: use one variants loop",
            )
        self._variant_loop = loop
        if self.launch is not None:
            # Started by `ttrace capture`: this run is one variant, set for the whole run.
            try:
                yield self.state.variant
            finally:
                self._variant_loop = None
            return
        try:
            snapshot = self._snapshot() if self.perturbation.variants else None
            for k, name in enumerate(self.perturbation.variants, start=1):
                self.state.variant, self.state.variant_index = name, k
                try:
                    yield name
                finally:
                    self.state.variant, self.state.variant_index = "nominal", 0
                    self._restore(snapshot)
            yield "nominal"
        finally:
            self._variant_loop = None

    def _check_step(self, iteration: int) -> None:
        """Refuse a step that would mislabel what it captures."""
        s = self.state
        if s.in_step:
            raise LoopError(
                "nested_step",
                f"tracer.step({iteration}) inside tracer.step({s.iteration}): one step "
                "context per training step",
            )
        wanted = s.iterations is None or iteration in s.iterations
        if not wanted:
            return
        if self.perturbation.count and self._variant_loop is None and self.launch is None:
            raise LoopError(
                "step_outside_variants",
                f"the reference has perturbations={self.perturbation.count} but "
                f"tracer.step({iteration}) runs outside a variants loop, so no perturbed "
                "variant would be captured: wrap the loop over iterations in "
                "`for _ in tracer.run_variants():` (outside `tracer.step()`), or, where a "
                "framework owns the loop, run the unchanged script under `ttrace capture "
                "--reference --perturbations N` (one variant per run)",
            )
        key = (s.variant, iteration)
        if key in self._stepped:
            raise LoopError(
                "step_repeated",
                f"iteration {iteration} of variant {s.variant} was already captured; "
                "each (variant, iteration) is one step",
            )
        self._stepped.add(key)

    def _snapshot(self) -> TrainingSnapshot:
        return TrainingSnapshot(self.roots, self.optimizer)

    def _restore(self, snap: TrainingSnapshot) -> None:
        snap.restore()

    def _after_optimizer_step(self) -> None:
        if not self._explicit_step:
            # Implicit iterations: the next forward starts the next step.
            self.writer.step_done(self.state.variant, self.state.iteration)
            self.state.iteration += 1
            self.state.reset_counters()
            self.hooks.grad_count.clear()
            self.hooks.reset_calls()

    def start(self) -> None:
        """Implicit mode (no `step()`): capture from now on; iterations count optimizer steps."""
        self.state.in_step = True
        self.state.reset_counters()

    # --- writing ----------------------------------------------------------------------------

    def _sink(
        self,
        key: TensorKey,
        tensor: torch.Tensor,
        placement: Placement | None,
        note: LayoutNote | None = None,
    ) -> None:
        self.writer.put(key, tensor, placement, note.attrs() if note is not None else None)
        if self.writer.error is not None:  # only with "warn" (else put raised it)
            self.state.stopped = True

    def flush(self) -> None:
        self.writer.flush()

    @property
    def phases(self) -> PhaseTimes:
        """Time spent per capture phase so far (`phase_times`)."""
        return self.writer.phases

    @property
    def bytes_written(self) -> int:
        return self.writer.bytes_written

    def close(self) -> RankRecord:
        """Finish writing; collective over the default process group when one exists
        (rank 0 gathers every rank's record and module list and writes the manifest)."""
        if self._closed:
            assert self._record is not None
            return self._record
        self._closed = True
        self._remove_hooks()
        error: TracerError | None = None
        try:
            self._record = self.writer.close()
        except TracerError as exc:
            error = exc
            self._record = self.writer.writer.close()
        failed = self.writer.error is not None  # raised (above) or only logged ("warn")
        gathered = self._gather(self._rank_payload(self._record, failed))
        if self.rank == 0:
            self._write_manifest(gathered)
        if error is not None:
            raise error
        if os.environ.get("TTRACE_SERVE") == "1":
            self.serve()
        return self._record

    def _remove_hooks(self) -> None:
        self.recorder.remove()
        self.clip.remove()
        if self.opt_snapshot is not None:
            self.opt_snapshot.remove()  # before opt_hooks: it wraps their wrapper
        self.hooks.remove()
        if self.hooks.backward_order is not None:
            self.hooks.backward_order.remove()
        self.routing.remove()
        self.expert_rows.remove()
        if self.handoff is not None:
            self.handoff.remove()
        self._resume_inference()
        if self.opt_hooks is not None:
            self.opt_hooks.remove()

    def _rank_payload(self, record: RankRecord, failed: bool) -> tuple[Any, ...]:
        """What this rank tells rank 0 for the manifest."""
        return (
            record,
            self.table.export(self.parallel.pp_rank, self.parallel.pp),
            sorted(self.state.seen_iterations),
            self.state.max_mb,
            # The nominal run of `ttrace capture` perturbs nothing; the joined bundle takes
            # the perturbation from its perturbed runs.
            None
            if self.launch is not None and self.launch.index == 0
            else self.perturbation.manifest_entry(),
            not failed,
            self.opt_hooks.config.section() if self.opt_hooks is not None else None,
            rank_replay_record(self) if self.role == "candidate" else None,
            safe_rank_environment(self),
        )

    def _gather(self, payload: tuple[Any, ...]) -> list[Any]:
        """Every rank's payload, in rank order (this one's alone without a process group)."""
        if not self._collective():
            return [payload]
        # Bounded: a killed rank is named after collective_timeout_s, never waited on.
        wait_for_ranks(
            self.writer.status.capture_id if self.writer.status else "",
            self.rank,
            self.world_size,
            self.collective_timeout_s,
            self.out_dir,
        )
        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, payload)
        return gathered

    def serve(self, reference: str | os.PathLike[str] | None = None, **options: Any) -> None:
        """Collective, after `close()`: serve localize replays until shutdown, SIGTERM or the
        idle timeout (docs/localize.md). Options and environment: docs/protocol.md."""
        from ttrace.agent import serve  # the agent needs pyzmq; capture alone does not

        if not self._closed:
            raise TracerError("ttrace: serve() needs a closed tracer (call close() first)")
        serve(self, reference, **options)

    def _write_manifest(self, gathered: list[Any]) -> None:
        failed = [p[0].rank for p in gathered if not p[5]]
        if failed:
            log.error("ttrace: ranks %s failed while writing; manifest not written", failed)
            return
        iterations = sorted({i for p in gathered for i in p[2]})
        max_mb = max(p[3] for p in gathered)
        write_manifest(
            self.out_dir,
            role=self.role,
            world_size=self.world_size,
            parallel=self.parallel.sizes(),
            precision=self.precision,
            variants=self._variants_written(),
            modules=merge_tables([p[1] for p in gathered]),
            iterations=iterations,
            micro_batches=max_mb + 1,
            ranks=[p[0] for p in gathered],
            perturbation=merged_entry([p[4] for p in gathered]),
            model=self.model_name,
            optimizer=merge_sections([p[6] for p in gathered]),
            gradient_convention=self.grad_convention.manifest_section(max_mb + 1),
            gradient_clipping=self.clip.section(),
            optimizer_sharding=optimizer_sharding(self.optimizer, self.roots),
            replay=merge_replay_records([p[7] for p in gathered], self.world_size)
            if self.role == "candidate"
            else None,
            capture_id=self.capture_id,
            start=self.start_point,
            environment=merge_environments([p[8] for p in gathered]),
        )
        remove_status_records(self.out_dir, self.world_size)

    def _variants_written(self) -> list[str]:
        """The variants this run's files hold (one per run under `ttrace capture`, which joins
        them into one bundle afterwards)."""
        if self.launch is None:
            return ["nominal", *self.perturbation.variants]
        return ["nominal"] if self.launch.index == 0 else ["nominal", self.launch.variant]

    def abandon(self) -> None:
        """The training loop failed: close this rank's file now, as at exit (a status record
        that says so, no manifest), without `close()`'s collective: other ranks may be gone."""
        self._atexit()
        atexit.unregister(self._atexit)

    def _atexit(self) -> None:
        # A job that exits without close(): leave a readable rank file, and a status record
        # that says so ("exited"); no manifest (that needs every rank, and exit is no time
        # for a collective).
        if not self._closed:
            with contextlib.suppress(Exception):
                self.writer.close(state="exited")
                if self.writer.error is not None:
                    return  # already reported, and its record says "failed"
                log.warning(
                    "ttrace: rank %d exited without tracer.close(): %s closed at exit with "
                    "%d tensors; no manifest.json (`ttrace diff --partial` compares it)",
                    self.rank,
                    self.writer.writer.path,
                    self.writer.writer.tensors,
                )


def _launched(
    launch: VariantRun,
    role: str,
    out_dir: str | os.PathLike[str],
    perturbations: int | Perturbation,
) -> tuple[str, Path, int | Perturbation]:
    """The role, folder and perturbations of a run started by `ttrace capture`: the
    launcher's, whatever the script says (the same script serves both roles unchanged)."""
    if role != launch.role or Path(out_dir) != launch.out_dir:
        log.info(
            "ttrace: started by `ttrace capture`: role %s into %s (the script says %s into %s)",
            launch.role,
            launch.out_dir,
            role,
            out_dir,
        )
    if launch.role == "candidate":
        return launch.role, launch.out_dir, 0
    given = perturbations if isinstance(perturbations, Perturbation) else None
    if given is not None and given.count == launch.count:
        return launch.role, launch.out_dir, given  # keeps the script's seeds and scale
    return launch.role, launch.out_dir, launch.count
