"""Join the runs of `ttrace capture --reference --perturbations K` into one reference bundle.

The nominal run wrote the bundle folder itself (variants ``["nominal"]``); each perturbed
run wrote its own folder holding only ``/perturbed-k``. The join copies every perturbed
group into the nominal run's rank files and rewrites the manifest, giving the bundle that
`tracer.run_variants()` writes in one run.

The runs must have captured the same thing: same world size and layout, iterations,
micro-batches, modules and rank files. A run that differs (a script that is not
deterministic, a run that stopped early) is refused with the run and the difference named,
and the bundle folder is left as the valid nominal-only reference it was: every rank file is
joined into a temporary copy first, and the copies replace the originals only when all of
them are done.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

import h5py

from .checksum import file_checksum
from .manifest import Manifest
from .rank_record import RankRecord

_TMP_SUFFIX = ".join.tmp"


class VariantJoinError(ValueError):
    """The runs cannot be joined; the message names the run and what differs."""


def _same(what: str, nominal: object, run: object, run_dir: Path) -> None:
    if nominal != run:
        raise VariantJoinError(
            f"{run_dir}: {what} {run!r} differs from the nominal run's {nominal!r}: every run "
            "of the reference must capture the same steps (seed the script, keep its data "
            "order fixed, see docs/integrations.md)"
        )


def _check_run(
    nominal: Manifest, run: Manifest, run_dir: Path, variant: str, first: dict | None
) -> None:
    """`first`: the first perturbed run's perturbation entry; every run lists the same seeds
    (each uses its own index into them), so the joined bundle lists them once."""
    _same("role", nominal.role, run.role, run_dir)
    _same("variants", ["nominal", variant], run.variants, run_dir)
    _same("world size", nominal.world_size, run.world_size, run_dir)
    _same("layout", nominal.parallel, run.parallel, run_dir)
    _same("iterations", nominal.iterations, run.iterations, run_dir)
    _same("micro-batches", nominal.micro_batches, run.micro_batches, run_dir)
    _same(
        "modules", [m["name"] for m in nominal.modules], [m["name"] for m in run.modules], run_dir
    )
    _same("rank files", [r.file for r in nominal.ranks], [r.file for r in run.ranks], run_dir)
    if first is not None and run.perturbation is not None:
        _same("perturbation seeds", first.get("seeds"), run.perturbation.get("seeds"), run_dir)


def _copy_groups(target: Path, sources: Sequence[tuple[Path, str]]) -> tuple[int, int]:
    """Copy each source file's variant group into `target`; (tensors, bytes) added."""
    tensors = nbytes = 0

    def count(_name: str, obj: object) -> None:
        nonlocal tensors, nbytes
        if isinstance(obj, h5py.Dataset):
            tensors += 1
            nbytes += obj.size * obj.dtype.itemsize

    with h5py.File(target, "r+") as out:
        for source, variant in sources:
            with h5py.File(source, "r") as src:
                if variant not in src:
                    raise VariantJoinError(f"{source}: holds no /{variant} group")
                src.copy(src[variant], out, name=variant)
                src[variant].visititems(count)
    return tensors, nbytes


def join_variant_runs(bundle_dir: str | os.PathLike[str], runs: Sequence[Path]) -> Manifest:
    """Join `runs[k-1]` (variant perturbed-k) into the nominal bundle at `bundle_dir`."""
    out = Path(bundle_dir)
    nominal = Manifest.read(out)
    if nominal.role != "reference" or nominal.variants != ["nominal"]:
        raise VariantJoinError(f"{out}: not the nominal run of a reference ({nominal.variants})")
    manifests = []
    for k, run_dir in enumerate(runs, start=1):
        run = Manifest.read(run_dir)
        first = manifests[0].perturbation if manifests else None
        _check_run(nominal, run, Path(run_dir), f"perturbed-{k}", first)
        manifests.append(run)
    joined: list[RankRecord] = []
    temporaries: list[tuple[Path, Path]] = []
    try:
        for record in nominal.ranks:
            target = out / record.file
            temporary = target.with_name(target.name + _TMP_SUFFIX)
            shutil.copyfile(target, temporary)
            temporaries.append((temporary, target))
            sources = [(Path(r) / record.file, f"perturbed-{k}") for k, r in enumerate(runs, 1)]
            tensors, nbytes = _copy_groups(temporary, sources)
            size, crc = file_checksum(temporary)
            joined.append(
                RankRecord(
                    record.rank,
                    record.file,
                    dict(record.coords),
                    record.tensors + tensors,
                    record.bytes + nbytes,
                    size,
                    crc,
                )
            )
    except BaseException:
        for temporary, _ in temporaries:
            with suppress(FileNotFoundError):
                temporary.unlink()
        raise
    # Until the new manifest is written the folder reads as an unfinished capture, never
    # as a manifest that describes other files.
    (out / Manifest.FILE_NAME).unlink()
    for temporary, target in temporaries:
        os.replace(temporary, target)
    nominal.variants = ["nominal", *(f"perturbed-{k}" for k in range(1, len(runs) + 1))]
    nominal.perturbation = manifests[0].perturbation if manifests else None
    nominal.ranks = joined
    nominal.write(out)
    return nominal
