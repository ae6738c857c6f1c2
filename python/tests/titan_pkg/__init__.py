"""torchtitan's own Llama 3 and parallelize code, from its package, trained on gloo."""
