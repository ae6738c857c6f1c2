"""Returned shards as protocol entries and raw bytes, and each rank's result blob.

A rank's blob is `[u64 LE length][JSON object][payloads back to back]`; the JSON holds
either `{"error": {...}}` or `{"tensors": [entry, ...]}` where each entry says where its
bytes sit (`offset`, `bytes`). Rank 0 turns the blobs into reply frames.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import torch

from ttrace.bundle import DType, Placement, TensorKey

from .errors import AgentError, ErrorCode

_LEN = struct.Struct("<Q")


def shard_entry(
    key: TensorKey, tensor: torch.Tensor, placement: Placement, rank: int
) -> tuple[dict[str, Any], bytes]:
    """The protocol entry (without `frame`) and the raw little-endian bytes of one shard."""
    is_scalar = tensor.dim() == 0
    local = tensor.detach().to("cpu").contiguous()
    if is_scalar:
        local = local.reshape(1)
    dtype = DType.from_torch(local.dtype)
    data = dtype.encode_torch(local).tobytes()
    entry: dict[str, Any] = {
        "variant": key.variant,
        "module": key.module,
        "kind": key.kind,
        "index": key.index,
        "iteration": key.iteration,
        "micro_batch": key.micro_batch,
        "rank": rank,
        "dtype": dtype.name,
        "shape": list(local.shape),
        "global_shape": list(placement.global_shape),
        "placement": placement.layout,
        "combine": placement.combine,
        "bytes": len(data),
    }
    if is_scalar:
        entry["is_scalar"] = True
    nd = len(placement.global_shape)
    if placement.layout == "boxes":
        entry["boxes"] = [[v for span in box for v in span] for box in placement.box_spans]
        assert all(len(row) == 3 * nd for row in entry["boxes"])
    else:
        entry["flat_ranges"] = [list(r) for r in placement.flat_ranges]
    if placement.combine == "sum":
        entry["partial_index"] = int(placement.partial_index or 0)
    if len(data) != math.prod(local.shape) * dtype.storage.itemsize:
        raise AgentError(ErrorCode.REPLAY_FAILED, f"{key.path}: payload size mismatch")
    return entry, data


def rank_blob(body: dict[str, Any], payloads: list[bytes]) -> bytes:
    head = json.dumps(body).encode("utf-8")
    return _LEN.pack(len(head)) + head + b"".join(payloads)


def tensors_blob(rank: int, shards: list[tuple[dict[str, Any], bytes]]) -> bytes:
    entries, payloads, offset = [], [], 0
    for entry, data in shards:
        entries.append({**entry, "offset": offset})
        payloads.append(data)
        offset += len(data)
    return rank_blob({"rank": rank, "tensors": entries}, payloads)


def error_blob(rank: int, error: AgentError) -> bytes:
    return rank_blob({"rank": rank, "error": error.as_dict()}, [])


def _body(blob: bytes) -> tuple[dict[str, Any], memoryview]:
    (n,) = _LEN.unpack_from(blob, 0)
    return json.loads(blob[_LEN.size : _LEN.size + n].decode("utf-8")), memoryview(blob)[
        _LEN.size + n :
    ]


def read_blob(blob: bytes) -> tuple[dict[str, Any], memoryview]:
    """(the JSON object, the payloads after it) of one rank's blob."""
    return _body(blob)


def merge_blobs(blobs: list[bytes]) -> tuple[list[dict[str, Any]], list[bytes]]:
    """(entries with `frame`, payload frames) of every rank, in rank order. When a rank
    failed, raises the lowest failing rank's error (ranks that were only aborted because of
    it say nothing)."""
    bodies = [_body(blob) for blob in blobs]
    for rank, (body, _) in enumerate(bodies):
        if "error" in body:
            err = body["error"]
            message = err["message"]
            if not message.startswith("rank "):
                message = f"rank {rank}: {message}"
            raise AgentError(ErrorCode(err["code"]), message, str(err.get("reason", "")))
    if any(body.get("aborted") for body, _ in bodies):
        raise AgentError(ErrorCode.REPLAY_FAILED, "the replay was aborted on every rank")
    entries: list[dict[str, Any]] = []
    frames: list[bytes] = []
    for body, data in bodies:
        for entry in body["tensors"]:
            offset = entry.pop("offset")
            frames.append(bytes(data[offset : offset + entry["bytes"]]))
            entries.append({**entry, "frame": len(frames)})
    return entries, frames
