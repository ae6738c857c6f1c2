"""The manifest's `environment` section (capture/environment_record.py): what a capture
records per module and per run, how ranks merge, and that the manifest keeps it."""

from __future__ import annotations

import pytest
from torch import nn

from ttrace.bundle.manifest import Manifest, write_manifest
from ttrace.capture import declare_kernel
from ttrace.capture.environment_record import (
    backend_switches,
    kernel_entry,
    merge_environments,
)


def test_a_kernel_entry_names_the_class_its_source_and_a_declared_tag() -> None:
    linear = nn.Linear(2, 2)
    entry = kernel_entry(linear)
    assert entry["class"] == "torch.nn.modules.linear.Linear"
    assert len(entry["source_sha256"]) == 64
    assert entry["package"] == "torch"
    assert "tag" not in entry
    declare_kernel(linear, "matmul=tf32")
    assert kernel_entry(linear)["tag"] == "matmul=tf32"
    with pytest.raises(TypeError):
        declare_kernel(linear, "")


def test_backend_switches_are_plain_json_values() -> None:
    switches = backend_switches()
    assert switches["float32_matmul_precision"] in ("highest", "high", "medium")
    assert all(isinstance(v, (bool, int, str)) for v in switches.values()), switches


def test_ranks_merge_devices_and_kernels() -> None:
    part = {
        "versions": {"torch": "2.13.0"},
        "devices": ["NVIDIA H100"],
        "backends": {"cuda.flash_sdp": True},
        "env": {},
        "kernels": {"layers.0": {"class": "A", "source_sha256": ""}},
    }
    other = dict(part, devices=["NVIDIA H200"], kernels={"layers.1": {"class": "B"}})
    merged = merge_environments([part, None, other])
    assert merged is not None
    assert merged["devices"] == ["NVIDIA H100", "NVIDIA H200"]
    assert sorted(merged["kernels"]) == ["layers.0", "layers.1"]
    assert merge_environments([None, None]) is None


def test_the_manifest_keeps_the_section(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {"versions": {"torch": "2.13.0"}, "devices": ["cpu"], "backends": {}, "env": {},
           "kernels": {}}  # fmt: skip
    write_manifest(
        tmp_path, role="reference", world_size=1, parallel={}, precision="fp32",
        variants=["nominal"], modules=[], iterations=[0], micro_batches=1,
        ranks=[{"rank": 0, "file": "rank-00000.h5", "coords": {}, "tensors": 0, "bytes": 0}],
        environment=env,
    )  # fmt: skip
    assert Manifest.read(tmp_path).environment == env


def test_a_module_sharded_by_fsdp2_is_recorded_by_its_own_class() -> None:
    # fully_shard swaps the class for a generated FSDP<Name>; the kernels are the class's.
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    plain = nn.Linear(4, 4)
    sharded = nn.Sequential(nn.Linear(4, 4))
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=1)
    try:
        fully_shard(sharded[0])
        assert type(sharded[0]).__name__ == "FSDPLinear"
        assert kernel_entry(sharded[0]) == kernel_entry(plain)
    finally:
        dist.destroy_process_group()
