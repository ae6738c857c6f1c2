"""The manifest's `optimizer` section: the hyper-parameters of each captured Adam/AdamW step,
which the diff needs to know how ill-conditioned an optimizer step is; absent for optimizers
it cannot re-evaluate."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from ttrace.capture import Tracer
from ttrace.capture.optimizer_config import merge_sections


def train(out: Path, make_opt, iterations=(0, 1, 2), captured=(1, 2)) -> dict:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    opt = make_opt(model)
    tracer = Tracer(model, opt, out, role="reference", iterations=list(captured))
    for it in iterations:
        opt.zero_grad()
        with tracer.step(it):
            model(torch.randn(3, 4)).square().sum().backward()
            opt.step()
        for group in opt.param_groups:  # a schedule: the section records each step's lr
            group["lr"] *= 0.5
    tracer.close()
    return json.loads((out / "manifest.json").read_text())


def test_adamw_section_per_group_and_step(tmp_path: Path) -> None:
    def make(model: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.AdamW(
            [
                {"params": model[0].parameters(), "weight_decay": 0.1},
                {"params": model[2].parameters(), "weight_decay": 0.0, "eps": 1e-6},
            ],
            lr=1e-2,
            betas=(0.8, 0.99),
        )

    section = train(tmp_path / "b", make)["optimizer"]
    assert section["type"] == "adamw"
    first, second = section["groups"]
    assert first["params"] == ["0/bias", "0/weight"]
    assert second["params"] == ["2/bias", "2/weight"]
    assert first["betas"] == [0.8, 0.99] and first["eps"] == 1e-8
    assert (first["weight_decay"], second["weight_decay"], second["eps"]) == (0.1, 0.0, 1e-6)
    assert not first["amsgrad"] and not first["maximize"]
    # Only captured iterations, with the scheduler's learning rate and the step count after
    # each step (bias correction).
    assert first["steps"] == [
        {"iteration": 1, "lr": 5e-3, "step": 2},
        {"iteration": 2, "lr": 2.5e-3, "step": 3},
    ]


def test_adam_single_group_names_no_params(tmp_path: Path) -> None:
    section = train(
        tmp_path / "b", lambda m: torch.optim.Adam(m.parameters(), lr=1e-3, weight_decay=0.01)
    )["optimizer"]
    assert section["type"] == "adam"
    (group,) = section["groups"]
    assert "params" not in group and group["weight_decay"] == 0.01
    assert [s["step"] for s in group["steps"]] == [2, 3]


def test_unknown_optimizer_has_no_section(tmp_path: Path) -> None:
    manifest = train(
        tmp_path / "b", lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    )
    assert "optimizer" not in manifest


def test_ranks_join_their_parameter_names() -> None:
    def section(names: list[str]) -> dict:
        group = {"betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0, "steps": []}
        return {"type": "adamw", "groups": [dict(group, params=names), dict(group, params=[])]}

    merged = merge_sections([section(["a/w"]), None, section(["b/w"])])
    assert merged is not None and merged["groups"][0]["params"] == ["a/w", "b/w"]
    assert merge_sections([section([]), {"type": "adam", "groups": []}]) is None
    assert merge_sections([None, None]) is None
