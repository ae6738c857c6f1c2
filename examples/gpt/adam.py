"""The Adam update on fp32 master values, shared by both optimizers so that the reference
and a sharded candidate apply exactly the same arithmetic per element."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class AdamHyper:
    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    sgd: bool = False  # plain SGD instead (useful where Adam's sign-like update hides error)


def adam_update(
    master: torch.Tensor,
    grad: torch.Tensor,
    m: torch.Tensor,
    v: torch.Tensor,
    step: int,
    h: AdamHyper,
) -> None:
    if h.sgd:
        master.add_(grad, alpha=-h.lr)
        return
    m.mul_(h.beta1).add_(grad, alpha=1 - h.beta1)
    v.mul_(h.beta2).addcmul_(grad, grad, value=1 - h.beta2)
    m_hat = m / (1 - h.beta1**step)
    v_hat = v / (1 - h.beta2**step)
    master.addcdiv_(m_hat, v_hat.sqrt().add_(h.eps), value=-h.lr)
