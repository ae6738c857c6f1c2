"""The agent's parts without a job: request parsing, the token file, state restore, call
templates and the shard codec."""

from __future__ import annotations

import json
import os
import random
import stat
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from ttrace.agent.errors import AgentError, ErrorCode
from ttrace.agent.launch_world import launch_world_size, launcher_part
from ttrace.agent.module_replay import refusal_check
from ttrace.agent.reference_feed import cut
from ttrace.agent.replay_request import ReplayRequest
from ttrace.agent.replay_rows import Refusal, ReplayRow, RowKind
from ttrace.agent.shard_codec import error_blob, merge_blobs, shard_entry, tensors_blob
from ttrace.agent.state_guard import StateGuard
from ttrace.agent.token_file import new_token, token_matches, write_private
from ttrace.agent.wire import MAX_REQUEST, parse_request
from ttrace.bundle import Placement, TensorKey
from ttrace.capture.call_template import CallTemplate, Slot


def _code(frames: list[bytes]) -> ErrorCode:
    with pytest.raises(AgentError) as info:
        parse_request(frames)
    return info.value.code


def test_parse_request_checks_shape_size_json_and_types() -> None:
    good = {"protocol": 2, "token": "t", "id": 3, "op": "ping"}
    req = parse_request([json.dumps(good).encode()])
    assert (req.id, req.op, req.token) == (3, "ping", "t")
    assert _code([b"{}", b"{}"]) is ErrorCode.MALFORMED
    assert _code([b"x" * (MAX_REQUEST + 1)]) is ErrorCode.TOO_LARGE
    assert _code([b"\xff"]) is ErrorCode.MALFORMED
    assert _code([b"{"]) is ErrorCode.MALFORMED
    assert _code([b"3"]) is ErrorCode.MALFORMED
    assert _code([json.dumps({**good, "protocol": 3}).encode()]) is ErrorCode.VERSION
    # A client of protocol 1 (before replays of hand-off, call and recompute rows) is refused,
    # told which version this agent speaks.
    with pytest.raises(AgentError) as older:
        parse_request([json.dumps({**good, "protocol": 1}).encode()])
    assert older.value.code is ErrorCode.VERSION and "speaks 2" in older.value.message
    assert _code([json.dumps({**good, "protocol": True}).encode()]) is ErrorCode.MALFORMED
    assert _code([json.dumps({**good, "id": "3"}).encode()]) is ErrorCode.MALFORMED
    assert _code([json.dumps({**good, "token": 5}).encode()]) is ErrorCode.MALFORMED
    assert _code([json.dumps({k: v for k, v in good.items() if k != "op"}).encode()]) is (
        ErrorCode.MALFORMED
    )


def test_replay_request_fields() -> None:
    body = {"module": "m", "iteration": 1, "micro_batch": 0, "phase": "forward"}
    req = ReplayRequest.from_body(body, {"m"}, {"nominal"})
    assert req.variants == ("nominal",)
    step = ReplayRequest.from_body(
        {"module": "", "iteration": 0, "phase": "step"}, {"m"}, {"nominal"}
    )
    assert step.micro_batch == 0
    for bad, code in (
        ({**body, "module": "x"}, ErrorCode.UNKNOWN_MODULE),
        ({**body, "iteration": -1}, ErrorCode.MALFORMED),
        ({**body, "iteration": 1.5}, ErrorCode.MALFORMED),
        ({**body, "variants": "nominal"}, ErrorCode.MALFORMED),
        ({**body, "variants": ["perturbed-9"]}, ErrorCode.NO_REFERENCE_TENSOR),
        ({**body, "phase": "step2"}, ErrorCode.MALFORMED),
    ):
        with pytest.raises(AgentError) as info:
            ReplayRequest.from_body(bad, {"m"}, {"nominal"})
        assert info.value.code is code


def test_token_file_is_private_and_compare_is_exact(tmp_path: Path) -> None:
    token = new_token()
    assert len(token) == 64 and int(token, 16) >= 0
    path = tmp_path / "sub" / "agent.token"
    path.parent.mkdir()
    path.write_text("old")
    os.chmod(path, 0o644)  # an existing, world-readable file must not stay so
    write_private(path, token + "\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == token + "\n"
    assert token_matches(token, token)
    assert not token_matches(token, token[:-1] + "0" if token[-1] != "0" else token[:-1] + "1")
    assert not token_matches(token, "")
    assert not token_matches(token, "é" * 64)


def test_state_guard_restores_params_grads_optimizer_and_rng() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    model.weight.main_grad = torch.ones(3, 4)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    grad = model.weight.grad.clone()
    exp_avg = opt.state[model.weight]["exp_avg"].clone()
    rng = torch.get_rng_state()
    py, npy = random.random, np.random.get_state()[1].copy()
    with StateGuard([model], opt):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        model.weight.main_grad = None
        random.random()
        np.random.rand()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.equal(model.weight.grad, grad)
    assert torch.equal(model.weight.main_grad, torch.ones(3, 4))
    assert torch.equal(opt.state[model.weight]["exp_avg"], exp_avg)
    assert torch.equal(torch.get_rng_state(), rng)
    assert np.array_equal(np.random.get_state()[1], npy) and py is random.random


def test_state_guard_keeps_main_grad_a_view_of_the_optimizer_buffer() -> None:
    """A distributed optimizer reads gradients from its flat buffer, of which main_grad is a
    view: a step replay writes the reference's gradient through the view; afterwards the view
    must still be the buffer's and the buffer hold the job's own values."""
    model = nn.Linear(4, 3, bias=False)
    buffer = torch.arange(16, dtype=torch.float32)
    model.weight.main_grad = buffer[2:14].view(3, 4)
    view, saved = model.weight.main_grad, buffer.clone()
    with StateGuard([model]):
        model.weight.main_grad.copy_(torch.full((3, 4), -1.0))
        model.weight.main_grad = torch.zeros(3, 4)
    assert model.weight.main_grad is view
    assert torch.equal(buffer, saved)
    view.fill_(7.0)
    assert buffer[2:14].eq(7.0).all()  # still the buffer's view


def test_call_template_slots_and_binding() -> None:
    x = torch.ones(2, 3, requires_grad=True)
    mask = torch.zeros(2, dtype=torch.bool)
    marker = object()
    t = CallTemplate.of_call((x, 5, marker), {"mask": mask, "flag": True})
    slots = {s.index: s for s in t.slots()}
    assert set(slots) == {"0", "mask"}
    assert slots["0"] == Slot("0", True, True, torch.float32, (2, 3))
    assert not slots["mask"].requires_grad
    new = torch.full((2, 3), 7.0)
    args, kwargs = t.bind({"0": new, "mask": mask})
    assert args[0] is new and args[1] == 5 and args[2] is marker and kwargs["flag"] is True
    assert t.why_not_replayable() == ""
    nested = CallTemplate.of_call(([x, x],), {})
    assert nested.why_not_replayable().startswith("inputs not captured")


def test_cut_and_codec_round_trip() -> None:
    full = np.arange(24, dtype=np.float64).reshape(4, 6)
    right = Placement.split((4, 6), 1, 1, 2)
    assert np.array_equal(cut(full, right, (4, 3)), full[:, 3:])
    partial = Placement.full((4, 6)).with_partial(1)
    assert not cut(full, partial, (4, 6)).any()  # the value goes to partial 0 only
    flat = Placement.flat((4, 6), [(0, 5, 4)])
    assert np.array_equal(cut(full, flat, (4,)), full.reshape(-1)[5:9])
    key = TensorKey("nominal", 0, 1, "m", "forward_output", "0")
    shard = torch.tensor(full[:, 3:], dtype=torch.bfloat16)
    entry, data = shard_entry(key, shard, right, rank=1)
    assert (
        entry["dtype"] == "bfloat16"
        and entry["bytes"] == 24
        and entry["boxes"] == [[0, 0, 4, 0, 3, 3]]
    )
    scalar, _ = shard_entry(key, torch.tensor(2.0), Placement.full(()), rank=0)
    assert scalar["is_scalar"] and scalar["shape"] == [1] and scalar["global_shape"] == [1]
    entries, frames = merge_blobs([tensors_blob(0, []), tensors_blob(1, [(entry, data)])])
    assert entries[0]["frame"] == 1 and entries[0]["rank"] == 1 and frames == [data]


def test_result_placement_takes_the_captured_placement_or_the_fallback(tmp_path: Path) -> None:
    """A returned tensor takes the placement this rank's capture stored for its id (a shape
    that differs is an error); only an id capture did not store asks the fallback."""
    import ttrace.capture as ttc
    from ttrace.agent.own_capture import OwnCapture
    from ttrace.agent.result_placement import ResultPlacement

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2))
    kinds = ["forward_input", "forward_output"]
    tracer = ttc.Tracer(model, None, tmp_path, iterations=[0], kinds=kinds, world_size=1)
    with tracer.step(0):
        model(torch.randn(4, 3)).sum().backward()
    tracer.close()
    own = OwnCapture(tmp_path, 0)
    try:
        placer = ResultPlacement(own, tracer.inference)
        out = TensorKey("nominal", 0, 0, "0", "forward_output", "0")
        stored = own.get(out)
        assert stored is not None

        def refuse() -> tuple[torch.Tensor, Placement]:
            raise AssertionError("the fallback was asked for a captured id")

        y = torch.randn(4, 2)
        data, placement = placer.place(out.with_variant("perturbed-1"), y, refuse)
        assert placement == stored.placement and torch.equal(data, y)
        with pytest.raises(AgentError) as info:
            placer.place(out, torch.randn(5, 2), refuse)
        assert info.value.code is ErrorCode.REPLAY_FAILED
        grad = TensorKey("nominal", 0, 0, "0", "input_grad", "0")
        assert own.get(grad) is None
        full = Placement.full((4, 3))
        data, placement = placer.place(grad, torch.ones(4, 3), lambda: (torch.ones(4, 3), full))
        assert placement == full and torch.equal(data, torch.ones(4, 3))
    finally:
        own.close()


def test_call_inference_places_what_capture_did_not_store(tmp_path: Path) -> None:
    """Outputs and input gradients of a call whose kinds were left out are placed by the
    inference from the call's input decisions, as capture would have placed them."""
    import ttrace.capture as ttc
    from ttrace.agent.call_inference import CallInference
    from ttrace.agent.own_capture import OwnCapture

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2))
    tracer = ttc.Tracer(model, None, tmp_path, iterations=[0], kinds=["forward_input"])
    with tracer.step(0):
        model(torch.randn(4, 3, requires_grad=True)).sum().backward()
    tracer.close()
    own = OwnCapture(tmp_path, 0)
    try:
        template = tracer.recorder.template("0", 0, 0)
        assert template is not None
        x = torch.randn(4, 3)
        key = TensorKey("nominal", 0, 0, "0", "forward_input", "0")
        assert own.get(key) is not None
        infer = CallInference(tracer.inference, own, model[0], template, {"0": x}, key)
        _, placement = infer.output(0, torch.randn(4, 2), primary=True)
        assert placement == Placement.full((4, 2))
        _, placement = infer.input_grad("0", torch.randn(4, 3))
        assert placement == own.get(key).placement == Placement.full((4, 3))
    finally:
        own.close()


@pytest.mark.parametrize(
    ("name", "kind", "call", "module"),
    [
        ("layers.0", RowKind.MODULE, "layers.0", "layers.0"),
        ("shared@call1", RowKind.CALL, "shared@call1", "shared"),
        ("shared.fc1@call12", RowKind.CALL, "shared.fc1@call12", "shared.fc1"),
        ("layers.1.mask@recompute", RowKind.RECOMPUTE, "layers.1.mask", "layers.1.mask"),
        ("shared@call1@recompute", RowKind.RECOMPUTE, "shared@call1", "shared"),
        ("decoder.layers.1@handoff", RowKind.HANDOFF, "decoder.layers.1", "decoder.layers.1"),
        ("odd@call0", RowKind.MODULE, "odd@call0", "odd@call0"),  # call 0 has no suffix
    ],
)
def test_replay_rows_name_the_module_and_the_call(
    name: str, kind: RowKind, call: str, module: str
) -> None:
    row = ReplayRow.parse(name)
    assert (row.name, row.kind, row.call, row.module) == (name, kind, call, module)


def test_refusals_are_typed_and_travel_between_ranks() -> None:
    def request(module: str, phase: str = "forward") -> ReplayRequest:
        return ReplayRequest(module, 0, 0, phase, ("nominal",))

    stochastic = CallTemplate.of_call((torch.ones(2),), {})
    stochastic.stochastic = True
    cases = [
        (ReplayRow.parse("m@recompute"), request("m@recompute"), Refusal.RECOMPUTE_STOCHASTIC),
        (ReplayRow.parse("m"), request("m"), Refusal.STOCHASTIC),
        (
            ReplayRow.parse("m@recompute"),
            request("m@recompute", "backward"),
            Refusal.RECOMPUTE_GRADIENTS,
        ),
    ]
    for row, req, reason in cases:
        with pytest.raises(AgentError) as info:
            refusal_check(row, req, stochastic)
        assert info.value.code is ErrorCode.NOT_REPLAYABLE and info.value.reason == reason
        # The reason survives the blob every rank sends rank 0.
        blob = error_blob(1, info.value)
        with pytest.raises(AgentError) as merged:
            merge_blobs([tensors_blob(0, []), blob])
        assert merged.value.as_dict()["reason"] == reason.value
    # A module called more than once is no longer refused: each call is replayed as its own.
    again = CallTemplate.of_call((torch.ones(2),), {})
    again.calls = 2
    refusal_check(ReplayRow.parse("m"), request("m"), again)


@pytest.mark.parametrize(
    ("launch", "argv", "ranks"),
    [
        (["torchrun", "--nproc-per-node", "2"], [], 2),
        (["torchrun", "--nnodes=2", "--nproc_per_node=4"], [], 8),
        (["torchrun", "--nnodes", "1:2", "--nproc-per-node", "4"], [], None),  # elastic
        (["torchrun", "--nproc-per-node", "gpu"], [], None),
        (["python", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
          "-m", "examples.gpt.train", "--tp", "2", "-n", "9"], ["-m", "examples.gpt.train"], 2),
        (["srun", "-n8", "python"], [], 8),
        (["srun", "-N", "2", "--ntasks-per-node", "4", "python"], [], 8),
        (["srun", "python"], [], None),  # the allocation decides
        (["mpirun", "-np", "3", "python"], [], 3),
        (["python3"], [], 1),
        (["python", "train.py", "-n", "4"], ["train.py"], 1),  # the script's -n is not a launcher's
    ],
)  # fmt: skip
def test_launch_world_size_reads_only_the_launchers_options(
    launch: list[str], argv: list[str], ranks: int | None
) -> None:
    assert launch_world_size(launcher_part(launch, argv)) == ranks
