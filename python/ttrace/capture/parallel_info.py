"""Where this rank sits in the parallel layout: what placement inference needs to know."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

COORDS = ("tp", "pp", "dp", "cp", "ep", "vpp")


@dataclass(frozen=True)
class ParallelInfo:
    """Sizes and this rank's coordinates.

    Activations are ``[s, b, h]`` (``seq_dim=0, batch_dim=1``, Megatron-LM) or ``[b, s, h]``
    (``seq_dim=1, batch_dim=0``, Hugging Face); left at None, the order is detected (see
    `run_order`). Token ids enter the embedding as ``[b, s]``. Expert parallelism
    subdivides data parallelism: ``ep`` consecutive dp ranks form an expert-parallel group,
    and the expert-data-parallel rank is ``dp_rank // ep``.

    ``grad_reduce`` says how the program reduces gradients over data-parallel ranks:
    ``"sum"`` when the loss is normalized by the global token count (each rank's ``.grad``
    is then a true partial sum of the reference gradient), ``"mean"`` when it is normalized
    per rank and gradients are averaged (Megatron's default); then captured per-rank
    gradients are divided by the number of partials, which is exact for powers of two.
    ``grad_divide_factor``, when set, is what the reduction divides the sum of the per-rank
    gradients by instead (FSDP2's `set_gradient_divide_factor`); see `grad_convention`.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    vpp: int = 1
    tp_rank: int = 0
    pp_rank: int = 0
    dp_rank: int = 0
    cp_rank: int = 0
    vpp_rank: int = 0
    seq_dim: int | None = None
    batch_dim: int | None = None
    cp_layout: str = "two_chunk"  # or "contiguous"
    grad_reduce: str | None = None
    grad_divide_factor: float | None = None
    # The activation order a wrapper suggests without declaring it ("bs" or "sb"; DDP's
    # `dim`, the dimension it would scatter inputs along): capture lays activations out by
    # it, records the placement as inferred, and keeps the other order as an alternative
    # that the comparison resolves against the reference's shapes.
    order_hint: str | None = None
    # How a data-parallel rank's rows sit in the global batch: "contiguous" (rank r holds
    # rows [r*b, (r+1)*b), a batch cut in dp slices) or "strided" (rank r holds rows
    # r, r+dp, r+2*dp, ...: torch's `DistributedSampler` deals a loader's rows out in turn,
    # so the global micro-batch of a one-process run is the ranks' rows interleaved).
    dp_rows: str = "contiguous"

    def __post_init__(self) -> None:
        for name in COORDS:
            size = getattr(self, name)
            if size < 1:
                raise ValueError(f"parallel size {name}={size} must be >= 1")
            if name in ("ep",):
                continue
            rank = getattr(self, f"{name}_rank")
            if not 0 <= rank < size:
                raise ValueError(f"{name}_rank={rank} is not in [0, {name}={size})")
        if self.dp % self.ep:
            raise ValueError(f"ep={self.ep} must divide dp={self.dp}")
        if self.cp_layout not in ("two_chunk", "contiguous"):
            raise ValueError(
                f"cp_layout must be 'two_chunk' or 'contiguous', not {self.cp_layout!r}"
            )
        dims = (self.seq_dim, self.batch_dim)
        if dims not in ((None, None), (0, 1), (1, 0), (0, None), (1, None), (None, 0), (None, 1)):
            raise ValueError(
                f"seq_dim={self.seq_dim}, batch_dim={self.batch_dim}: activations must be "
                "[s, b, ...] (seq_dim=0, batch_dim=1) or [b, s, ...] (seq_dim=1, batch_dim=0)"
            )
        if self.dp_rows not in ("contiguous", "strided"):
            raise ValueError(f"dp_rows must be 'contiguous' or 'strided', not {self.dp_rows!r}")
        if self.order_hint not in (None, "sb", "bs"):
            raise ValueError(f"order_hint must be 'sb' or 'bs', not {self.order_hint!r}")
        if self.grad_reduce not in (None, "sum", "mean"):
            raise ValueError(f"grad_reduce must be 'sum' or 'mean', not {self.grad_reduce!r}")
        if self.grad_divide_factor is not None and not self.grad_divide_factor > 0:
            raise ValueError(f"grad_divide_factor={self.grad_divide_factor} must be > 0")

    def reduction_scale(self, parts: int) -> float:
        """Factor on a captured per-rank gradient, one of `parts` data-parallel partials,
        so that the partials add up to the reference's gradient."""
        if self.grad_divide_factor is not None:
            return 1.0 / self.grad_divide_factor
        return 1.0 / parts if self.grad_reduce == "mean" else 1.0

    @property
    def ep_rank(self) -> int:
        return self.dp_rank % self.ep

    @property
    def edp(self) -> int:
        return self.dp // self.ep

    @property
    def edp_rank(self) -> int:
        return self.dp_rank // self.ep

    @property
    def world_size(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    def sizes(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COORDS}

    def coords(self) -> dict[str, int]:
        return {
            "tp": self.tp_rank,
            "pp": self.pp_rank,
            "dp": self.dp_rank,
            "cp": self.cp_rank,
            "ep": self.ep_rank,
            "vpp": self.vpp_rank,
        }

    @classmethod
    def from_mesh(cls, mesh: Any, **options: Any) -> ParallelInfo:
        """The layout a `DeviceMesh` with named dimensions describes, this rank's
        coordinates included: `tp`, `dp*` / `fsdp` / `hsdp` (replicate and shard dimensions
        multiply), `cp`, `pp` (see `mesh_dims`). `options` set the other fields
        (`grad_reduce`, `cp_layout`, ...)."""
        from .mesh_dims import mesh_coords

        sizes: dict[str, Any] = {}
        for role, (size, index) in mesh_coords(mesh).items():
            sizes[role], sizes[f"{role}_rank"] = size, index
        return cls(**sizes, **options)

    @classmethod
    def single(cls) -> ParallelInfo:
        """A single-device run (the reference)."""
        return cls()
