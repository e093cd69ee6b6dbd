"""Seconds per part of the analysis suite, and the cyclic collector between its parts."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager

# Collected between parts (``Timer``) from this many rows up: below, 17 collections cost more.
COLLECT_FROM_ROWS = 1_000_000


class Timer:
    """Seconds per named part of the suite, summed over repeated parts."""

    def __init__(self, *, collect: bool = True) -> None:
        self.seconds: dict[str, float] = {}
        self.collect = collect

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        # A part's frames can sit in reference cycles, freed only by the cyclic collector, which
        # runs by object counts, not bytes: collected here, the next part does not start beside
        # them (issue 37: most of the resident memory between parts at a hundred models).
        if self.collect:
            gc.collect()
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


@contextmanager
def frozen(collecting: bool) -> Iterator[None]:
    """The objects alive before the sections (the modules, the panel rows) left out of the
    collections between parts: they outlive the sections, and traversing them was most of each
    collection's cost (0.1 s each, 17 of them, at a hundred models; issue 37).

    Left alone when the process froze objects itself (a test session, a host application):
    ``gc.unfreeze`` would undo that too, and the old objects are left out of collections already.
    """
    if not collecting or gc.get_freeze_count() > 0:
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
