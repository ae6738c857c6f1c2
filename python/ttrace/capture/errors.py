"""The one exception type the tracer raises."""


class TracerError(RuntimeError):
    """A capture or write failed; the message names the tensor or hook that failed.

    What was written before the failure stays readable: the rank file is closed cleanly
    and the writer stops accepting tensors."""
