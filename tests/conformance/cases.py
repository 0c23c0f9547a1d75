"""A differential case: a named list of steps, run against both servers of a pair."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tests.conformance.wire import Step


@dataclass(frozen=True)
class Case:
    """One differential case.

    Attributes
    ----------
    id : str
        Unique, ``protocol/area/what`` (also the key of the allow-list).
    steps : sequence of Step
        Requests (and set-up steps) performed in order against each server.
    pair : str
        Which server pair it runs on (the flags both servers start with), see ``conftest.PAIRS``.
    """

    id: str
    steps: Sequence[Step]
    pair: str = "main"
