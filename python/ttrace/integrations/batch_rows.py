"""Which rows of the global batch a data-parallel rank holds, read from the sampler its
training loader uses.

A framework that swaps the user's sampler for torch's `DistributedSampler` (Lightning under
`strategy="ddp"`) deals the loader's rows out in turn: rank r of n gets rows r, r+n, r+2n, ...
of the sampler's order (a permutation fixed by its seed and epoch when it shuffles).
The global micro-batch of a one-process run, rows [m*B, (m+1)*B), is then the ranks' rows
interleaved, not their rows one rank after the other; the capture must place the batch
dimension as strided (`ParallelInfo.dp_rows`) or every activation compares permuted.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Iterable
from typing import Any

from torch.utils.data import DataLoader, RandomSampler
from torch.utils.data.distributed import DistributedSampler

from ttrace.capture.errors import TracerError
from ttrace.capture.parallel_info import ParallelInfo

log = logging.getLogger("ttrace")

SAMPLER_ERRORS = (
    "shuffled",  # a RandomSampler: no data-parallel run deals the same rows
    "not_distributed",  # a one-process reference reading rows in order where a
    # distributed run of the same script shuffles them with a DistributedSampler
    "replicas",  # the sampler's num_replicas is not the data-parallel size
    "rank",  # the sampler's rank is not this rank's data-parallel rank
    "samplers_differ",  # several training loaders whose samplers deal rows differently
    "split_by_rank",  # each data-parallel rank reads its own slice of the documents, so the
    # global batch depends on the data-parallel degree (torchtitan's Hugging Face loader)
)


class SamplerError(TracerError):
    """The training loader's sampler gives the ranks rows that no one-process reference
    sees in the same micro-batches; `code` says why (see `SAMPLER_ERRORS`)."""

    def __init__(self, code: str, message: str) -> None:
        assert code in SAMPLER_ERRORS, code
        super().__init__(f"ttrace: {message}")
        self.code = code


def loaders(value: Any) -> list[DataLoader[Any]]:
    """The DataLoaders in what a framework hands back as its training loader (one loader, or
    a list, tuple or dict of them)."""
    if isinstance(value, DataLoader):
        return [value]
    items: Iterable[Any] = ()
    if isinstance(value, dict):
        items = value.values()
    elif isinstance(value, list | tuple):
        items = value
    return [loader for item in items for loader in loaders(item)]


def _rows_of(loader: DataLoader[Any], info: ParallelInfo) -> str:
    sampler = loader.sampler
    if isinstance(sampler, RandomSampler):
        raise SamplerError(
            "shuffled",
            "the training loader shuffles with a RandomSampler, whose order a data-parallel "
            "run cannot repeat; capture with DataLoader(..., shuffle=False), or a "
            "DistributedSampler with a fixed seed (docs/integrations.md)",
        )
    if not isinstance(sampler, DistributedSampler):
        return "contiguous"
    if sampler.num_replicas != info.dp:
        raise SamplerError(
            "replicas",
            f"the training loader's DistributedSampler has num_replicas="
            f"{sampler.num_replicas}, the job's data-parallel size is {info.dp}",
        )
    if sampler.rank != info.dp_rank:
        raise SamplerError(
            "rank",
            f"the training loader's DistributedSampler has rank={sampler.rank}, this "
            f"process's data-parallel rank is {info.dp_rank}",
        )
    rows = len(sampler.dataset)  # type: ignore[arg-type]
    if rows % sampler.num_replicas:
        # The sampler pads (drop_last=False) or drops (True) the last rows of each epoch.
        warnings.warn(
            f"ttrace: {rows} rows do not split over {sampler.num_replicas} ranks: the "
            f"DistributedSampler {'drops' if sampler.drop_last else 'repeats'} "
            f"{rows % sampler.num_replicas if sampler.drop_last else -rows % sampler.num_replicas}"
            " rows at the end of each epoch, so the last batch of an epoch differs from a "
            "one-process run's; capture iterations before it",
            stacklevel=3,
        )
    return "strided"


def with_sampler_rows(info: ParallelInfo, training_loader: Any) -> ParallelInfo:
    """`info` with `dp_rows` as the training loader's sampler deals rows; raises
    SamplerError when no one-process reference could see the same micro-batches."""
    found = {_rows_of(loader, info) for loader in loaders(training_loader)}
    if info.dp == 1:
        return info
    if len(found) > 1:
        raise SamplerError(
            "samplers_differ",
            "the training loaders deal rows differently (some DistributedSampler, some "
            "not); capture one loader at a time",
        )
    rows = found.pop() if found else info.dp_rows
    if rows != info.dp_rows:
        log.info("ttrace: batch rows %s over %d data-parallel ranks (sampler)", rows, info.dp)
    return dataclasses.replace(info, dp_rows=rows)
