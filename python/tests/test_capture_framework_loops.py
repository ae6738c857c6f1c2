"""What loops owned by frameworks do to the capture: an optimizer stepped with a closure that
runs the forward and backward inside `step()` (Lightning's automatic optimization), and a
loop that calls the model's submodules without its root's forward (Lightning's
`training_step` on one device), with micro-batches numbered by `tracer.micro_batch(m)`."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from ttrace.bundle.reader import BundleReader
from ttrace.capture import Tracer


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def batch(mb: int) -> torch.Tensor:
    return torch.randn(3, 4, generator=torch.Generator().manual_seed(mb))


def keys(out: Path) -> set[tuple[int, int, str, str, str]]:
    """(iteration, micro-batch, module, kind, index) of every nominal tensor."""
    return {i[1:] for i in BundleReader(out).identities() if i[0] == "nominal"}


def test_main_grads_are_read_after_the_closure(tmp_path: Path) -> None:
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tracer = Tracer(model, opt, tmp_path / "b", role="candidate")
    seen: dict[str, torch.Tensor] = {}

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = model(batch(0)).square().sum()
        loss.backward()
        seen.update({n: p.grad.clone() for n, p in model.named_parameters()})
        return loss

    with tracer.step(0):
        opt.step(closure)
    tracer.close()
    reader = BundleReader(tmp_path / "b")
    grads = {(i[3], i[5]): reader.merged(i) for i in reader.identities() if i[4] == "main_grad"}
    assert len(grads) == 4  # both Linear layers' weight and bias, none missing
    for (module, name), value in grads.items():
        assert torch.equal(torch.from_numpy(value).float(), seen[f"{module}.{name}"])


def test_micro_batches_without_the_roots_forward(tmp_path: Path) -> None:
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tracer = Tracer(model, opt, tmp_path / "b", role="candidate")
    with tracer.step(0):
        for mb in range(2):
            with tracer.micro_batch(mb):
                model.body(batch(mb)).sum().backward()  # the root's forward never runs
        opt.step()
    tracer.close()
    found = keys(tmp_path / "b")
    modules = {m for _, _, m, _, _ in found}
    assert not any("@call" in m for m in modules), modules  # two micro-batches, not two calls
    assert {(0, 0, "body.0", "forward_input", "0"), (0, 1, "body.0", "forward_input", "0")} <= found
    params = {(m, i) for _, _, m, kind, i in found if kind == "parameter"}
    assert params == {
        ("body.0", "weight"),
        ("body.0", "bias"),
        ("body.2", "weight"),
        ("body.2", "bias"),
    }
