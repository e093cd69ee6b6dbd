"""numpy's huge-page advice while the analysis runs (``small_pages``, issue 37)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.analysis import _io, _suite, read_scores, run_suite
from clcg_pipeline.analysis._timing import NUMPY_HUGEPAGE_ENV, _hugepage_switch, small_pages
from clcg_pipeline_tests.analysis.conftest import make_scores, small_config


def _advice() -> bool:
    """numpy's current huge-page advice (read by setting it and putting it back)."""
    switch = _hugepage_switch()
    assert switch is not None, "numpy has no huge-page switch"
    current = switch(True)
    switch(current)
    return current


@pytest.fixture
def advised(monkeypatch: pytest.MonkeyPatch):
    """numpy advising huge pages, as it does by default, and no user choice in the environment."""
    monkeypatch.delenv(NUMPY_HUGEPAGE_ENV, raising=False)
    switch = _hugepage_switch()
    assert switch is not None
    before = switch(True)
    yield
    switch(before)


class _Seen(Exception):
    """Raised by a patched step once it has recorded numpy's advice."""


def test_small_pages_turns_the_advice_off_and_restores_it(advised) -> None:
    with small_pages():
        assert _advice() is False
        with small_pages():  # nested (estimate_file around the suite): the outer state comes back
            assert _advice() is False
        assert _advice() is False
    assert _advice() is True
    with pytest.raises(RuntimeError), small_pages():
        raise RuntimeError("a failing step")
    assert _advice() is True


def test_small_pages_keeps_the_users_choice(advised, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NUMPY_HUGEPAGE_ENV, "1")
    with small_pages():
        assert _advice() is True


def test_the_read_and_the_reordering_run_on_small_pages_the_sections_do_not(
    advised, monkeypatch: pytest.MonkeyPatch, project, small_langs, tmp_path: Path
) -> None:
    """The scored rows' columns (read_scores) and their reordered copy (the suite's preparation)
    are allocated on small pages; the sections keep numpy's own advice (no gain measured there)."""
    seen: dict[str, bool] = {}
    real_read, real_prepare = _io._read_columns, _suite._prepare

    def read(*args: object, **kwargs: object) -> pd.DataFrame:
        seen["read"] = _advice()
        return real_read(*args, **kwargs)  # type: ignore[arg-type]

    def sections(*args: object, **kwargs: object) -> dict[str, object]:
        seen["sections"] = _advice()
        raise _Seen

    path = tmp_path / "scores.parquet"
    make_scores().to_parquet(path, index=False)
    monkeypatch.setattr(_io, "_read_columns", read)
    scores = read_scores(str(path))
    assert seen == {"read": False} and len(scores) > 0 and _advice() is True

    def prepare(*args: object, **kwargs: object) -> object:
        seen["prepare"] = _advice()
        return real_prepare(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_suite, "_prepare", prepare)
    monkeypatch.setattr(_suite, "_sections", sections)
    with pytest.raises(_Seen):
        run_suite(scores, small_config(project, small_langs, n_models=2, replicates=10))
    assert seen == {"read": False, "prepare": False, "sections": True}
    assert _advice() is True
