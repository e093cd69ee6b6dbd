"""conftest.use_memory_for_tmp_path: tmp_path in memory where the machine allows it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clcg_pipeline_tests.conftest import use_memory_for_tmp_path


def test_tmp_path_goes_to_a_usable_memory_folder_unless_pytest_was_told_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_DEBUG_TEMPROOT", raising=False)
    assert not use_memory_for_tmp_path(tmp_path / "missing", free=0)
    assert not use_memory_for_tmp_path(tmp_path, free=1 << 60)  # short of space
    assert "PYTEST_DEBUG_TEMPROOT" not in os.environ
    noexec = bool(os.statvfs(tmp_path).f_flag & os.ST_NOEXEC)  # where programs cannot run: refused
    assert use_memory_for_tmp_path(tmp_path, free=0) is not noexec
    assert os.environ.get("PYTEST_DEBUG_TEMPROOT") == (None if noexec else str(tmp_path))
    monkeypatch.setenv("PYTEST_DEBUG_TEMPROOT", "/tmp")  # chosen by whoever runs pytest
    assert not use_memory_for_tmp_path(tmp_path, free=0)
    assert os.environ["PYTEST_DEBUG_TEMPROOT"] == "/tmp"


def test_this_sessions_tmp_path_is_in_memory_when_dev_shm_is_usable(tmp_path: Path) -> None:
    usable = Path("/dev/shm").is_dir() and not os.statvfs("/dev/shm").f_flag & os.ST_NOEXEC
    if os.environ.get("PYTEST_DEBUG_TEMPROOT") == "/dev/shm" and usable:
        assert tmp_path.resolve().is_relative_to("/dev/shm"), tmp_path
