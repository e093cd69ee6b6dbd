"""Report stage: the self-contained HTML report and the terminal H1 table."""

from clcg_pipeline.report._labels import H1_SUMMARY, KNOWN_SECTIONS
from clcg_pipeline.report._new_model_section import new_model_lines
from clcg_pipeline.report._render import render_report, write_report
from clcg_pipeline.report._svg import Bar, bar_chart_svg
from clcg_pipeline.report._table import format_h1_table

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
