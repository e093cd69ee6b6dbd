"""conftest.collect_then_freeze: each test's garbage collection scans only what is new, from the
first module fixture on (what collection imported is frozen before anything runs)."""

from __future__ import annotations

import gc
import weakref

import pytest

from clcg_pipeline_tests.conftest import collect_then_freeze


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_what_survives_a_collection_is_not_scanned_again() -> None:
    survivor = _Cycle()
    assert any(obj is survivor for obj in gc.get_objects())  # scanned by the next collection
    collect_then_freeze()
    assert not any(obj is survivor for obj in gc.get_objects())  # frozen: left out from now on


def test_garbage_is_still_collected_before_the_freeze() -> None:
    dead = _Cycle()
    collected: list[bool] = []
    weakref.finalize(dead, collected.append, True)
    del dead  # unreachable, but only the cyclic collector frees it
    collect_then_freeze()
    assert collected == [True]


@pytest.fixture(scope="module")
def frozen_when_the_first_fixture_runs() -> int:
    """A module fixture runs before any test's own fixtures (the per-test freeze among them)."""
    return gc.get_freeze_count()


def test_what_collection_imported_is_frozen_before_module_fixtures_run(
    frozen_when_the_first_fixture_runs: int,
) -> None:
    assert frozen_when_the_first_fixture_runs > 0
