"""A small DEALER client of the localize protocol for tests, and a numpy merge of the shards
a replay returns (by placement, as docs/bundle-format.md merges captured shards)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import zmq

from ttrace.bundle import DType


class AgentClient:
    def __init__(self, endpoint: str, token: str, timeout_s: float = 60.0) -> None:
        self.context = zmq.Context.instance()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(f"tcp://{endpoint}")
        self.token = token
        self.timeout_ms = int(timeout_s * 1000)
        self.next_id = 0

    def close(self) -> None:
        self.socket.close(0)

    def send(self, op: str, **fields: Any) -> int:
        self.next_id += 1
        body = {"protocol": 2, "token": self.token, "id": self.next_id, "op": op, **fields}
        self.socket.send(json.dumps(body).encode())
        return self.next_id

    def send_raw(self, frames: list[bytes]) -> None:
        self.socket.send_multipart(frames)

    def receive(self, timeout_ms: int | None = None) -> tuple[dict[str, Any], list[bytes]]:
        if not self.socket.poll(timeout_ms if timeout_ms is not None else self.timeout_ms):
            raise TimeoutError("no reply from the agent")
        frames = self.socket.recv_multipart()
        return json.loads(frames[0]), frames[1:]

    def call(self, op: str, **fields: Any) -> tuple[dict[str, Any], list[bytes]]:
        rid = self.send(op, **fields)
        header, payloads = self.receive()
        assert header["id"] == rid, header
        return header, payloads


def decode(entry: dict[str, Any], payloads: list[bytes]) -> np.ndarray:
    data = payloads[entry["frame"] - 1]
    assert len(data) == entry["bytes"], entry
    dtype = DType.from_name(entry["dtype"])
    stored = np.frombuffer(data, dtype=dtype.storage).reshape(entry["shape"])
    return dtype.decode(stored)


def merge(
    entries: list[dict[str, Any]], payloads: list[bytes], disagree: set[tuple] | None = None
) -> dict[tuple, np.ndarray]:
    """(variant, module, kind, index, iteration, micro_batch) -> the logical tensor. Replicas
    that disagree (a bug signal in itself) fail the merge, or with `disagree` are collected
    there and the lowest rank's value is kept."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for e in entries:
        key = (e["variant"], e["module"], e["kind"], e["index"], e["iteration"], e["micro_batch"])
        groups.setdefault(key, []).append(e)
    out: dict[tuple, np.ndarray] = {}
    for key, shards in groups.items():
        shape = tuple(shards[0]["global_shape"])
        parts: dict[int, np.ndarray] = {}
        covered = np.zeros(shape, dtype=bool)
        for e in shards:
            local = decode(e, payloads)
            part = e.get("partial_index", 0) if e["combine"] == "sum" else 0
            value = parts.setdefault(part, np.zeros(shape))
            for dst, src in _regions(e, local, shape):
                seen = covered[dst]
                if e["combine"] == "replica" and seen.any():
                    if not np.array_equal(value[dst][seen], src[seen]):
                        assert disagree is not None, f"{key}: replicas disagree"
                        disagree.add(key)
                    src = np.where(seen, value[dst], src)
                value[dst] = src
                covered[dst] = True
        assert covered.all(), f"{key}: shards leave a hole"
        out[key] = sum(parts.values())
    return out


def _regions(e: dict[str, Any], local: np.ndarray, shape: tuple[int, ...]):
    nd = len(shape)
    if e["placement"] == "flat":
        flat = local.reshape(-1)
        for lo, go, n in e["flat_ranges"]:
            yield np.unravel_index(np.arange(go, go + n), shape), flat[lo : lo + n]
        return
    for row in e["boxes"]:
        spans = [row[3 * d : 3 * d + 3] for d in range(nd)]
        dst = tuple(slice(gs, gs + n) for _, gs, n in spans)
        src = tuple(slice(ls, ls + n) for ls, _, n in spans)
        yield dst, local[src]


def rel_error(a: np.ndarray, b: np.ndarray) -> float:
    denom = float(np.linalg.norm(b.ravel()))
    diff = float(np.linalg.norm((a - b).ravel()))
    return diff / denom if denom > 0 else diff


__all__ = ["AgentClient", "decode", "math", "merge", "rel_error"]
