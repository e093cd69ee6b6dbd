"""Report stage: the self-contained HTML report and the terminal H1 table."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from clcg_pipeline.report._labels import H1_SUMMARY, KNOWN_SECTIONS
from clcg_pipeline.report._new_model_section import new_model_lines
from clcg_pipeline.report._svg import Bar, bar_chart_svg
from clcg_pipeline.report._table import format_h1_table

if TYPE_CHECKING:
    from clcg_pipeline.report._render import render_report, write_report

# Loaded on first use (PEP 562): rendering pulls in results, granularity and Dagster (~1.3 s),
# which the terminal table printed after every ``clcg run``, even a no-op one, does not need.
_LAZY = {"render_report": "clcg_pipeline.report._render", "write_report": "clcg_pipeline.report._render"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


__all__ = [
    "H1_SUMMARY",
    "KNOWN_SECTIONS",
    "Bar",
    "bar_chart_svg",
    "format_h1_table",
    "new_model_lines",
    "render_report",
    "write_report",
]
