"""The tiny valid reference/candidate pair every hostile case is derived from.

Reference: one rank with the nominal pass and two perturbed variants. Candidate: TP2, with a
column split, a replica, a bfloat16 parameter split on rows and a scalar loss summed from two
partials. `ttrace diff reference candidate` is clean (exit 0). Numpy and h5py only.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from ttrace.bundle import BundleWriter, Placement, RankRecord, TensorKey, write_manifest

MODULES = (
    ("embed", 1, "Embedding"),
    ("layers.0.fc1", 2, "Linear"),
    ("layers.0.fc2", 2, "Linear"),
    ("loss", 1, "CrossEntropy"),
)
VARIANTS = ("nominal", "perturbed-1", "perturbed-2")
FC1 = TensorKey("nominal", 0, 0, "layers.0.fc1", "forward_output", "0")
FC2 = TensorKey("nominal", 0, 0, "layers.0.fc2", "forward_output", "0")
EMBED = TensorKey("nominal", 0, 0, "embed", "forward_output", "0")
WEIGHT = TensorKey("nominal", 0, -1, "layers.0.fc1", "parameter", "weight")
LOSS = TensorKey("nominal", 0, 0, "loss", "forward_output", "0")


def _values(hidden: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "embed": rng.standard_normal((4, hidden)).astype(np.float32),
        "fc1": rng.standard_normal((4, hidden)).astype(np.float32),
        "fc2": rng.standard_normal((4, 4)).astype(np.float32),
        "weight": rng.standard_normal((hidden, 4)).astype(np.float32),
    }


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even bfloat16 bits of float32 values."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def _manifest_modules() -> list[dict[str, object]]:
    return [
        {"name": name, "order": i, "depth": depth, "type": kind}
        for i, (name, depth, kind) in enumerate(MODULES)
    ]


def write_reference(bundle: Path, hidden: int = 6, model: str = "hostile tiny MLP") -> None:
    shutil.rmtree(bundle, ignore_errors=True)
    base = _values(hidden)
    rng = np.random.default_rng(11)
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        for variant in VARIANTS:
            scale = 0.0 if variant == "nominal" else 1e-4

            def noisy(a: np.ndarray, scale: float = scale) -> np.ndarray:
                noise = rng.uniform(-scale, scale, a.shape).astype(np.float32)
                return (a * (1 + noise)).astype(np.float32)

            for key, value in ((EMBED, base["embed"]), (FC1, base["fc1"]), (FC2, base["fc2"])):
                writer.write(key.with_variant(variant), noisy(value))
            writer.write(WEIGHT.with_variant(variant), bf16_bits(base["weight"]), dtype="bfloat16")
            writer.write(LOSS.with_variant(variant), np.float32(0.75 * (1 + 10 * scale)))
    record = writer.close()
    write_manifest(
        bundle,
        role="reference",
        world_size=1,
        parallel={},
        precision="fp32",
        variants=list(VARIANTS),
        perturbation={"scheme": "relative-uniform", "relative_scale": 1e-4, "seeds": [1, 2]},
        modules=_manifest_modules(),
        iterations=[0],
        micro_batches=1,
        ranks=[record],
        model=model,
    )


def write_candidate(bundle: Path) -> list[RankRecord]:
    shutil.rmtree(bundle, ignore_errors=True)
    base = _values(6)
    records = []
    for rank in range(2):
        with BundleWriter(
            bundle, rank=rank, world_size=2, role="candidate", coords={"tp": rank}
        ) as writer:
            writer.write(EMBED, base["embed"], Placement.full((4, 6), "replica"))
            cols = slice(3 * rank, 3 * rank + 3)
            writer.write(FC1, base["fc1"][:, cols].copy(), Placement.split((4, 6), 1, rank, 2))
            writer.write(FC2, base["fc2"], Placement.full((4, 4), "replica"))
            rows = slice(3 * rank, 3 * rank + 3)
            writer.write(
                WEIGHT,
                bf16_bits(base["weight"][rows]),
                Placement.split((6, 4), 0, rank, 2),
                dtype="bfloat16",
            )
            writer.write(LOSS, np.float32(0.25 * (rank + 1)), Placement.full(()).with_partial(rank))
        records.append(writer.close())
    write_manifest(
        bundle,
        role="candidate",
        world_size=2,
        parallel={"tp": 2},
        precision="fp32",
        variants=["nominal"],
        modules=_manifest_modules(),
        iterations=[0],
        micro_batches=1,
        ranks=records,
        model="hostile tiny MLP TP2",
    )
    return records
