"""What the results tests share: the synthetic project of the analysis tests (shared rather than
built a second way), and the checks of a written document read back against its typed shape."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clcg_pipeline.storage import DocumentError
from clcg_pipeline_tests.analysis.conftest import project, small_langs

__all__ = ["assert_refused_naming", "project", "small_langs", "tampered"]


def tampered(path: Path, change: Callable[[Any], object]) -> Path:
    """The JSON file at ``path`` edited in place by ``change`` (a written file gone wrong); ``path``."""
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def assert_refused_naming(
    read: Callable[[Path], object], path: Path, change: Callable[[Any], object], field: str, shape: str
) -> None:
    """``read`` (``read_comparison``, ``read_leaderboard``) refuses the file at ``path`` once
    ``change`` has edited it, naming the file and ``field`` first, and the ``shape`` it fits."""
    tampered(path, change)
    with pytest.raises(DocumentError) as raised:
        read(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: field {field}:"), message
    assert shape in message
