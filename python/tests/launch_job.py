"""A training script run by `ttrace capture` in the tests: it owns nothing about variants.

    python launch_job.py OUT loop       # a plain loop, as a framework's loop would be
    python launch_job.py OUT variants   # the same steps inside tracer.run_variants()

`--fail-variant perturbed-1` makes that run exit 3 before capturing (a crashed run);
`--short-variant perturbed-2` makes that run capture one iteration fewer (a run that does
not repeat the others).
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
from torch import nn

from ttrace.capture import Tracer


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("mode", choices=["loop", "variants"])
    p.add_argument("--role", default="candidate")
    p.add_argument("--perturbations", type=int, default=0)
    p.add_argument("--fail-variant")
    p.add_argument("--short-variant")
    a = p.parse_args()
    variant = os.environ.get("TTRACE_CAPTURE_VARIANT", "")
    name = "nominal" if variant.startswith("0/") else f"perturbed-{variant.split('/')[0]}"
    if a.fail_variant == name:
        return 3
    iterations = 1 if a.short_variant == name else 2
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    tracer = Tracer(model, opt, a.out, role=a.role, perturbations=a.perturbations)
    loops = tracer.run_variants() if a.mode == "variants" else iter(["once"])
    for _ in loops:
        for it in range(iterations):
            with tracer.step(it):
                for mb in range(2):
                    g = torch.Generator().manual_seed(100 * it + mb)
                    x = torch.randn(4, 8, generator=g)
                    model(x).square().mean().backward()
                opt.step()
                opt.zero_grad()
    tracer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
