"""A tiny GPT with Megatron-style tensor, sequence, context, pipeline, data and expert
parallelism on torch.distributed (gloo on CPU), used to exercise ttrace capture."""
