"""The reference loop cannot be written wrong: misuse that would mislabel tensors raises a
`LoopError` with its code at once; what a Megatron-core model hands the tracer (non-tensor
extra state, a bias Parameter returned as an output, a wrapped optimizer with fp32 main
parameters) is snapshotted, hooked and read correctly."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from ttrace.bundle.reader import BundleReader
from ttrace.capture import Layout, Tracer
from ttrace.capture.errors import LoopError
from ttrace.capture.optimizer_view import OptimizerView


class SkipBias(nn.Module):
    """A linear that returns its bias Parameter (Megatron's skip-bias-add), and a module
    state dict holding None (Megatron's `_extra_state`)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.weight = nn.Parameter(torch.randn(4, 4))
        self.bias = nn.Parameter(torch.randn(4))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, nn.Parameter]:
        return x @ self.weight.t(), self.bias

    def get_extra_state(self) -> None:
        return None

    def set_extra_state(self, state: object) -> None:
        pass


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = SkipBias()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, bias = self.proj(x)
        return out + bias


def data(it: int, mb: int) -> torch.Tensor:
    return torch.randn(3, 4, generator=torch.Generator().manual_seed(10 * it + mb))


def train(out: Path, perturbations: int = 0, micro_batches: int = 2) -> Net:
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    role = "reference" if perturbations else "candidate"
    tracer = Tracer(model, opt, out, role=role, perturbations=perturbations)
    for _ in tracer.run_variants():
        for it in range(2):
            opt.zero_grad()
            with tracer.step(it):
                for mb in range(micro_batches):
                    model(data(it, mb)).square().sum().backward()
                opt.step()
    tracer.close()
    return model


@pytest.mark.parametrize("perturbations", [0, 2])
def test_variants_inside_step_raises_at_once(perturbations: int, tmp_path: Path) -> None:
    """The README's sentence read naturally: the variants loop inside the step. With
    perturbations the step itself already refuses to run outside a variants loop."""
    model = Net()
    out = tmp_path / "b"
    tracer = Tracer(model, None, out, role="reference", perturbations=perturbations)
    want = "step_outside_variants" if perturbations else "variants_inside_step"
    for it, loop in enumerate((lambda: tracer.variants(0), tracer.run_variants)):
        ran = []
        with pytest.raises(LoopError) as caught, tracer.step(it):
            for _ in loop():
                ran.append(model(data(0, 0)).sum())
        assert caught.value.code == want and ran == []
        assert "run_variants()" in str(caught.value)


@pytest.mark.parametrize("misuse", ["nested_step", "step_repeated", "step_outside_variants"])
def test_other_misuse_raises(misuse: str, tmp_path: Path) -> None:
    perturbations = 2 if misuse == "step_outside_variants" else 0
    role = "reference" if perturbations else "candidate"
    tracer = Tracer(Net(), None, tmp_path / "b", role=role, perturbations=perturbations)
    with pytest.raises(LoopError) as caught:
        if misuse == "nested_step":
            with tracer.step(0), tracer.step(1):
                pass
        elif misuse == "step_repeated":
            for it in (0, 0):
                with tracer.step(it):
                    pass
        else:
            with tracer.step(0):
                pass
    assert caught.value.code == misuse


def test_returned_bias_is_hooked_once_per_call(tmp_path: Path) -> None:
    """A hook on the bias Parameter itself would fire again at every later backward under
    its old key ("already written"); the alias's hook sees exactly this call's gradient."""
    train(tmp_path / "b", perturbations=2)
    reader = BundleReader(tmp_path / "b")
    assert reader.validate() == []
    for it in range(2):
        for mb in range(2):
            key = ("nominal", it, mb, "proj", "output_grad", "1")
            got = torch.as_tensor(reader.merged(key))
            assert got.shape == (4,)
    # The bias gradient of one micro-batch: d/d(bias) sum((xW^T + b)^2) = 2 sum_rows(out).
    x = data(1, 1)  # recompute micro-batch 1 of iteration 1 with its captured weights
    weight = torch.as_tensor(reader.merged(("nominal", 1, -1, "proj", "parameter", "weight")))
    bias = torch.as_tensor(reader.merged(("nominal", 1, -1, "proj", "parameter", "bias")))
    want = 2 * (x.double() @ weight.t() + bias).sum(0)
    got = torch.as_tensor(reader.merged(("nominal", 1, 1, "proj", "output_grad", "1"))).double()
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)


def test_perturbed_variants_restore_wrapped_optimizer_main_params(tmp_path: Path) -> None:
    """A wrapper whose torch optimizer steps fp32 main copies (Megatron's mixed-precision
    optimizer): the variants must restore the main copies too, or the nominal run diverges."""

    class MainParamOptimizer:
        def __init__(self, model: nn.Module) -> None:
            self.model = model
            self.main = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
            self.optimizer = torch.optim.Adam(self.main, lr=1e-2)

        def zero_grad(self) -> None:
            self.model.zero_grad()

        def step(self) -> None:
            for p, m in zip(self.model.parameters(), self.main, strict=True):
                m.grad = p.grad.clone()
            self.optimizer.step()
            with torch.no_grad():
                for p, m in zip(self.model.parameters(), self.main, strict=True):
                    p.copy_(m)

    def run(out: Path, perturbations: int) -> Net:
        model = Net()
        opt = MainParamOptimizer(model)
        role = "reference" if perturbations else "candidate"
        tracer = Tracer(model, opt, out, role=role, perturbations=perturbations)
        for _ in tracer.run_variants():
            for it in range(2):
                opt.zero_grad()
                with tracer.step(it):
                    model(data(it, 0)).square().sum().backward()
                    opt.step()
        tracer.close()
        return model

    plain, perturbed = run(tmp_path / "plain", 0), run(tmp_path / "pert", 2)
    for a, b in zip(plain.parameters(), perturbed.parameters(), strict=True):
        assert torch.equal(a, b)


def test_optimizer_view_reads_chained_and_main_param_state() -> None:
    model = Net()
    inner = torch.optim.Adam(model.parameters(), lr=1e-2)
    model(data(0, 0)).sum().backward()
    inner.step()

    class Wrapper:  # Megatron's FP32Optimizer keeps its torch optimizer as `.optimizer`
        def __init__(self) -> None:
            self.optimizer = inner

    class Chained:
        def __init__(self) -> None:
            self.chained_optimizers = [Wrapper()]

    view = OptimizerView(Chained())
    entry, why = view.entry(model.proj.weight)
    assert why == "" and entry is not None
    assert set(entry.tensors) == {"exp_avg", "exp_avg_sq"}
    entry, why = OptimizerView(object()).entry(model.proj.weight)
    assert entry is None and "no torch optimizer" in why


def test_layout_spellings() -> None:
    assert Layout.parse("split:2") == Layout("split", None, 2)
    assert Layout.parse("split:1:bs") == Layout("split", "bs", 1)
    assert Layout.parse("gradsum").for_gradient() == Layout("sum")
    assert Layout.parse("split:-1:sb").spec() == "split:-1:sb"
    for bad in ("split", "split:x", "replica:bs:1"):
        with pytest.raises(ValueError):
            Layout.parse(bad)
