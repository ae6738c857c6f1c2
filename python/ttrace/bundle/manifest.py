"""manifest.json: the run's metadata and one entry per rank file."""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

from .._version import __version__
from .rank_record import RankRecord
from .writer import COORD_NAMES, FORMAT, FORMAT_VERSION, READABLE_VERSIONS, ROLES, rank_file_name


@dataclass
class Manifest:
    """The fields of docs/bundle-format.md ("manifest.json"), validated before writing.

    Validation here catches what would otherwise only show up on the workstation, after
    the bundle was copied off the cluster: a missing rank, a wrong parallel layout.
    """

    role: str
    world_size: int
    parallel: dict[str, int]
    precision: str
    variants: list[str]
    modules: list[dict[str, Any]]
    iterations: list[int]
    micro_batches: int
    ranks: list[RankRecord]
    perturbation: dict[str, Any] | None = None
    model: str = ""
    # The optimizer's hyper-parameters per captured step (Adam/AdamW only), for the diff's
    # optimizer-step tolerances.
    optimizer: dict[str, Any] | None = None
    # How the job reduces gradients over data parallelism, and where that was read
    # (capture/grad_convention.py); absent in bundles of older captures.
    gradient_convention: dict[str, Any] | None = None
    # The global gradient norm and clip coefficient of each clipped step, where the framework
    # computed them (capture/clip_record.py); absent when nothing clipped and in older bundles.
    gradient_clipping: dict[str, Any] | None = None
    # Whether the optimizer's state is sharded over data parallelism, and what declares it
    # (capture/optimizer_sharding.py); absent where nothing declares it and in older bundles.
    optimizer_sharding: dict[str, Any] | None = None
    # What a relaunch from the bundles needs (`ttrace serve`): launch, code fingerprint,
    # call templates, buffer digests. Candidates only; absent in older bundles.
    replay: dict[str, Any] | None = None
    # One id per capture, shared by every rank (the ranks' status records carry it too): what
    # tells a copied bundle from another capture, where paths cannot (bundles move between
    # hosts). Absent in older bundles.
    capture_id: str = ""
    # The checkpoint the run resumed from (path, step, digest of its metadata), when it did
    # not start from fresh weights. Absent in older bundles and fresh starts.
    start: dict[str, Any] | None = None
    # What may differ between two runs of one layout (versions, devices, kernel switches,
    # per-module kernels; capture/environment_record.py). Both roles; absent in older bundles.
    environment: dict[str, Any] | None = None
    producer: str = f"ttrace {__version__}"
    created: str = field(
        default_factory=lambda: datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    )

    PRECISIONS: ClassVar[tuple[str, ...]] = ("fp32", "bf16", "bf16-autocast", "fp16", "fp8")
    FILE_NAME: ClassVar[str] = "manifest.json"

    def validate(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be 'reference' or 'candidate', got {self.role!r}")
        unknown = set(self.parallel) - set(COORD_NAMES)
        if unknown:
            raise ValueError(f"unknown parallel sizes {sorted(unknown)}; known: {COORD_NAMES}")
        if any(int(v) < 1 for v in self.parallel.values()):
            raise ValueError(f"parallel sizes must be >= 1: {self.parallel}")
        product = math.prod(self.parallel[name] for name in ("tp", "pp", "dp", "cp"))
        if product != self.world_size:
            raise ValueError(f"tp*pp*dp*cp = {product} does not equal world_size {self.world_size}")
        if self.precision not in self.PRECISIONS:
            raise ValueError(
                f"unknown precision {self.precision!r}; known: {', '.join(self.PRECISIONS)}"
            )
        if not self.variants or self.variants[0] != "nominal":
            raise ValueError(f"variants must start with 'nominal', got {self.variants}")
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"duplicate variants in {self.variants}")
        if self.role == "candidate" and self.variants != ["nominal"]:
            raise ValueError(f"a candidate has only the 'nominal' variant, got {self.variants}")
        for module in self.modules:
            missing = {"name", "order", "depth", "type"} - set(module)
            if missing:
                raise ValueError(f"module entry {module} lacks {sorted(missing)}")
        orders = sorted(int(m["order"]) for m in self.modules)
        if orders != list(range(len(self.modules))):
            raise ValueError("module orders must be 0..n-1, one per module")
        names = [m["name"] for m in self.modules]
        if len(set(names)) != len(names):
            raise ValueError("module names must be unique")
        if self.micro_batches < 0:
            raise ValueError(f"micro_batches must be >= 0, got {self.micro_batches}")
        rank_ids = sorted(r.rank for r in self.ranks)
        if rank_ids != list(range(self.world_size)):
            missing_ranks = sorted(set(range(self.world_size)) - set(rank_ids))
            raise ValueError(
                f"ranks must be exactly 0..{self.world_size - 1} once each; "
                f"got {rank_ids} (missing {missing_ranks})"
            )
        for record in self.ranks:
            if record.file != rank_file_name(record.rank):
                raise ValueError(f"rank {record.rank} has file {record.file!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            **({"capture_id": self.capture_id} if self.capture_id else {}),
            "role": self.role,
            "variants": list(self.variants),
            **({"perturbation": self.perturbation} if self.perturbation is not None else {}),
            "world_size": self.world_size,
            "parallel": dict(self.parallel),
            "precision": self.precision,
            "model": self.model,
            "modules": [
                {
                    "name": str(m["name"]),
                    "order": int(m["order"]),
                    "depth": int(m["depth"]),
                    "type": str(m["type"]),
                    # optional: the compiled block the module runs inside
                    **({"compiled_in": str(m["compiled_in"])} if m.get("compiled_in") else {}),
                    # optional: what each pipeline stage's copy of a stage container holds
                    **({"stage_slices": str(m["stage_slices"])} if m.get("stage_slices") else {}),
                }
                for m in sorted(self.modules, key=lambda m: int(m["order"]))
            ],
            "iterations": [int(i) for i in self.iterations],
            "micro_batches": self.micro_batches,
            **({"optimizer": self.optimizer} if self.optimizer is not None else {}),
            **(
                {"gradient_convention": self.gradient_convention}
                if self.gradient_convention is not None
                else {}
            ),
            **(
                {"gradient_clipping": self.gradient_clipping}
                if self.gradient_clipping is not None
                else {}
            ),
            **(
                {"optimizer_sharding": self.optimizer_sharding}
                if self.optimizer_sharding is not None
                else {}
            ),
            **({"replay": self.replay} if self.replay is not None else {}),
            **({"start": self.start} if self.start is not None else {}),
            **({"environment": self.environment} if self.environment is not None else {}),
            "ranks": [r.to_dict() for r in sorted(self.ranks, key=lambda r: r.rank)],
            "producer": self.producer,
            "created": self.created,
        }

    def write(self, bundle_dir: str | os.PathLike[str]) -> Path:
        """Validate, then write atomically: a reader never sees half a manifest."""
        self.validate()
        directory = Path(bundle_dir)
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / self.FILE_NAME
        temporary = directory / (self.FILE_NAME + ".tmp")
        temporary.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, target)
        return target

    @classmethod
    def read(cls, bundle_dir: str | os.PathLike[str]) -> Manifest:
        data = json.loads((Path(bundle_dir) / cls.FILE_NAME).read_text(encoding="utf-8"))
        if data.get("format") != FORMAT or data.get("format_version") not in READABLE_VERSIONS:
            raise ValueError(
                f"{Path(bundle_dir) / cls.FILE_NAME}: format_version "
                f"{data.get('format_version')} is not one of {list(READABLE_VERSIONS)}"
            )
        return cls(
            role=data["role"],
            world_size=int(data["world_size"]),
            parallel={k: int(v) for k, v in data["parallel"].items()},
            precision=data["precision"],
            variants=list(data["variants"]),
            modules=list(data["modules"]),
            iterations=[int(i) for i in data["iterations"]],
            micro_batches=int(data["micro_batches"]),
            ranks=[RankRecord.from_dict(r) for r in data["ranks"]],
            perturbation=data.get("perturbation"),
            model=data.get("model", ""),
            optimizer=data.get("optimizer"),
            gradient_convention=data.get("gradient_convention"),
            gradient_clipping=data.get("gradient_clipping"),
            optimizer_sharding=data.get("optimizer_sharding"),
            replay=data.get("replay"),
            start=data.get("start"),
            environment=data.get("environment"),
            capture_id=str(data.get("capture_id", "")),
            producer=data.get("producer", ""),
            created=data.get("created", ""),
        )


def write_manifest(
    bundle_dir: str | os.PathLike[str],
    *,
    role: str,
    world_size: int,
    parallel: Mapping[str, int],
    precision: str,
    variants: Sequence[str],
    modules: Sequence[Mapping[str, Any]],
    iterations: Sequence[int],
    micro_batches: int,
    ranks: Sequence[RankRecord | Mapping[str, Any]],
    perturbation: Mapping[str, Any] | None = None,
    model: str = "",
    optimizer: Mapping[str, Any] | None = None,
    gradient_convention: Mapping[str, Any] | None = None,
    gradient_clipping: Mapping[str, Any] | None = None,
    optimizer_sharding: Mapping[str, Any] | None = None,
    replay: Mapping[str, Any] | None = None,
    capture_id: str | None = None,
    start: Mapping[str, Any] | None = None,
    environment: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``<bundle_dir>/manifest.json`` (rank 0 calls this after gathering RankRecords).

    Missing parallel sizes default to 1; without `capture_id` the bundle gets a new one.
    Returns the manifest's path.
    """
    manifest = Manifest(
        role=role,
        world_size=int(world_size),
        parallel={name: 1 for name in COORD_NAMES} | {k: int(v) for k, v in parallel.items()},
        precision=precision,
        variants=list(variants),
        modules=[dict(m) for m in modules],
        iterations=[int(i) for i in iterations],
        micro_batches=int(micro_batches),
        ranks=[r if isinstance(r, RankRecord) else RankRecord.from_dict(dict(r)) for r in ranks],
        perturbation=dict(perturbation) if perturbation is not None else None,
        model=model,
        optimizer=dict(optimizer) if optimizer is not None else None,
        gradient_convention=dict(gradient_convention) if gradient_convention is not None else None,
        gradient_clipping=dict(gradient_clipping) if gradient_clipping is not None else None,
        optimizer_sharding=dict(optimizer_sharding) if optimizer_sharding is not None else None,
        replay=dict(replay) if replay is not None else None,
        capture_id=capture_id if capture_id is not None else uuid.uuid4().hex,
        start=dict(start) if start is not None else None,
        environment=dict(environment) if environment is not None else None,
    )
    return manifest.write(bundle_dir)
