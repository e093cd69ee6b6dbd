"""Position-curve points name their region in the tooltip (positions repeat in every region)."""

import re

from clcg_pipeline.report._linechart import Point, Series, line_chart_svg


def test_each_point_title_names_its_group_and_category() -> None:
    regions = ["begin", "begin", "middle", "middle"]
    positions = ["begin", "end", "begin", "end"]
    svg = line_chart_svg(
        positions,
        [Series("mid", tuple(Point(v) for v in (0.1, 0.2, 0.3, 0.4)))],
        title="t",
        y_label="gap",
        groups=regions,
    )
    titles = re.findall(r"<g><title>([^<]*)</title><circle", svg)
    assert titles == [
        "mid, begin · begin: 0.100 (interval withheld)",
        "mid, begin · end: 0.200 (interval withheld)",
        "mid, middle · begin: 0.300 (interval withheld)",
        "mid, middle · end: 0.400 (interval withheld)",
    ]
    assert len(set(titles)) == 4
