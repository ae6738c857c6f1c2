"""Hugging Face Llama with its own tensor-parallel plan (`base_model_tp_plan`) on 2 ranks."""

from __future__ import annotations

import torch
from transformers import LlamaForCausalLM
from transformers.distributed import DistributedConfig

import ttrace.capture as ttc  # ttrace

from .common import STEPS, finish, global_batch, init, parse_args
from .hf_model import break_row_parallel, tiny_llama


def main() -> None:
    args = parse_args()
    _, world = init()
    model = tiny_llama()
    if world > 1:
        if args.bug != "none":
            break_row_parallel(model.model.layers[0].mlp.down_proj, args.bug)
        config, _, meshes = LlamaForCausalLM.prepare_distribute_model(DistributedConfig(tp_size=2))
        model = LlamaForCausalLM.maybe_distribute_model(model, config, meshes)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ttc.seeded_init(model, seed=0)  # ttrace
    role = "reference" if world == 1 else "candidate"  # ttrace
    tracer = ttc.Tracer(model, opt, args.out, role=role, perturbations=2 * (world == 1))  # ttrace

    def train_step(step: int) -> None:
        ids = global_batch(step)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()

    for _ in tracer.run_variants():  # ttrace
        for step in range(STEPS):  # ttrace
            with tracer.step(step):  # ttrace
                train_step(step)  # ttrace
    tracer.close()  # ttrace


if __name__ == "__main__":
    main()
    finish()  # after main's models are freed: see common.finish
