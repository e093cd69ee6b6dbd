"""What the storage tests of the document's section models share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from clcg_pipeline.storage import DocumentError

SOURCE = "run/study_results.json"


def refused(call: Callable[..., Any], document: dict[str, Any]) -> str:
    """The message ``call`` (``validate_document``, a view's reader) refuses ``document`` with."""
    with pytest.raises(DocumentError) as raised:
        call(document, source=SOURCE)
    return str(raised.value)
