"""The one exception type the tracer raises."""


class TracerError(RuntimeError):
    """A capture or write failed; the message names the tensor or hook that failed.

    What was written before the failure stays readable: the rank file is closed cleanly
    and the writer stops accepting tensors."""


class LoopError(TracerError):
    """The training loop around the tracer is written so that tensors would be filed under
    the wrong variant, iteration or micro-batch; raised at once, before anything is
    mislabeled. `code` says which misuse (see `LOOP_ERRORS`)."""

    def __init__(self, code: str, message: str) -> None:
        assert code in LOOP_ERRORS, code
        super().__init__(f"ttrace: {message}")
        self.code = code


LOOP_ERRORS = (
    "variants_inside_step",  # `for _ in tracer.variants(it)` inside `with tracer.step(it)`
    "nested_variants",  # a variants loop inside another
    "nested_step",  # `tracer.step()` inside `tracer.step()`
    "step_repeated",  # the same (variant, iteration) captured twice
    "step_outside_variants",  # a perturbed reference stepping outside its variants loop
)
