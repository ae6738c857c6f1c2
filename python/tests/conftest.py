"""Fixtures shared by the test files of this folder."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from serving_candidate import ServingCandidate


@pytest.fixture
def serving() -> Iterator[list[ServingCandidate]]:
    """Candidate jobs a test started to serve replays: stopped when the test ends, passed or
    failed, so no torchrun is left behind."""
    started: list[ServingCandidate] = []
    yield started
    for job in started:
        job.stop()
