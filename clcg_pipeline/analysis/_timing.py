"""Seconds per part of the analysis suite, the cyclic collector between its parts, and the
memory pages of its large arrays (:func:`small_pages`)."""

from __future__ import annotations

import gc
import importlib
import os
import time
from collections.abc import Callable, Iterator
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


# Memory pages of the large arrays allocated at once over every scored row (the read columns and
# their canonically reordered copy): numpy's transparent huge pages turned off there (issue 37).
#
# numpy advises the kernel to back every array of 4 MiB or more with 2 MiB pages. On the shared
# 2-core virtual machine a fresh huge page costs far more kernel time than the 512 small pages
# it replaces: reading and reordering the 16M rows of a hundred models took 8-10 s of system time
# with them and 4-5 s without (user time +0.3 s), and the whole suite 2-3 CPU s less (the
# sections, which allocate and free smaller arrays repeatedly, gained nothing and keep numpy's
# advice). Which pages hold an array never changes a value. numpy's own switch is the
# ``NUMPY_MADVISE_HUGEPAGE`` environment variable: where it is set, the user's choice is kept.
#: numpy's environment variable for its huge-page advice; when set, it is left as the user set it.
NUMPY_HUGEPAGE_ENV = "NUMPY_MADVISE_HUGEPAGE"


def _hugepage_switch() -> Callable[[bool], bool] | None:
    """numpy's setter of its huge-page advice (returns the previous value), or None where absent.

    It is the function numpy itself calls at import with the environment variable's value
    (``numpy._core.multiarray`` from numpy 2, ``numpy.core.multiarray`` before).
    """
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        switch = getattr(module, "_set_madvise_hugepage", None)
        if callable(switch):
            return switch  # type: ignore[no-any-return]
    return None


@contextmanager
def small_pages() -> Iterator[None]:
    """numpy's large arrays on ordinary pages inside the block; the previous advice restored after.

    Does nothing where ``NUMPY_MADVISE_HUGEPAGE`` is set (the user chose) or numpy has no switch.
    """
    switch = None if NUMPY_HUGEPAGE_ENV in os.environ else _hugepage_switch()
    if switch is None:
        yield
        return
    previous = switch(False)
    try:
        yield
    finally:
        switch(previous)
