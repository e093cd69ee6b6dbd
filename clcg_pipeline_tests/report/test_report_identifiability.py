"""One identifiability rule on the demo study (issue 34, item 1): what the estimates table
withholds, no section of study_results.json, the report or the leaderboard shows.

The demo has 11 articles, enough for ``study.min_articles`` = 10, so this module re-analyses a
copy of the shared demo study (``demo_study`` fixture) with ``min_articles`` raised to 12: every
headline estimand is then marked not identifiable in the estimates table. Only the analysis job
(estimates, report, leaderboard) is re-run, in process, on the copy: min_articles is a study
setting, so ``clcg run`` would also redo the corpus, the inputs and every responses partition
(from the call cache), about 20 s that shows nothing this module checks.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest
from dagster._core.storage.defs_state.base import set_defs_state_storage

from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.storage import read_frame
from clcg_pipeline_tests.demo_study import DemoStudy
from clcg_pipeline_tests.results.test_identifiability import SHOWN, withheld_numbers

# An interval as the report prints one ("[0.080, 0.137]", "90% CI 0.081, 0.130" in a fact list,
# a whole-rank interval "(1–2)"), and a p value ("p 0.996", "p (lower bound test) 0.0005").
_INTERVAL = re.compile(r"\[-?\d+\.\d+, -?\d+\.\d+\]|90% CI:? -?\d|\(\d+\u2013\d+\)")
_P_VALUE = re.compile(r"(?:^|\s)p(?: \([^)]*\))?:? [<\u2264]?\d")


_MIN_ARTICLES = re.compile(r"^min_articles: \d+", re.MULTILINE)


@pytest.fixture(scope="module")
def withheld_study(demo_study: DemoStudy, tmp_path_factory: pytest.TempPathFactory) -> DemoStudy:
    """A copy of the demo study re-run with study.min_articles = 12 > its 11 articles."""
    root = tmp_path_factory.mktemp("withheld_study")
    config, data, home = root / "config", root / "data", root / "home"
    shutil.copytree(demo_study.config_dir, config)
    shutil.copytree(demo_study.data_dir, data)
    shutil.copytree(demo_study.home, home)
    study = config / "study.yaml"
    text, raised = _MIN_ARTICLES.subn("min_articles: 12", study.read_text(encoding="utf-8"))
    assert raised == 1, "study.yaml has no min_articles line to raise"
    study.write_text(text, encoding="utf-8")
    before = (data / "study_results.json").read_bytes()
    defs = build_definitions(str(config), str(data))
    with set_defs_state_storage(None), dg.DagsterInstance.from_config(str(home)) as instance:
        done = defs.resolve_job_def("analysis_job").execute_in_process(
            instance=instance, raise_on_error=False
        )
    assert done.success, [event.message for event in done.all_events if event.is_failure]
    # The document was written again, from the raised setting (not left as the demo's).
    assert (data / "study_results.json").read_bytes() != before
    env = {**demo_study.env, "DAGSTER_HOME": str(home)}
    return dataclasses.replace(demo_study, config_dir=config, data_dir=data, home=home, env=env)


def _document(demo: DemoStudy) -> dict[str, Any]:
    return json.loads((demo.data_dir / "study_results.json").read_text(encoding="utf-8"))


def _estimates(demo: DemoStudy) -> pd.DataFrame:
    return read_frame(demo.data_dir / "estimates" / "data.parquet")


def _section_html(demo: DemoStudy, key: str) -> str:
    page = (demo.data_dir / "report.html").read_text(encoding="utf-8")
    start = page.index(f'<section id="result-{key}"')
    return page[start : page.index("</section>", start)]


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)))


def _blocks(node: object, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _blocks(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _blocks(value, f"{path}[{index}]")


def test_no_withheld_estimand_shows_a_number_anywhere_in_the_document(withheld_study: DemoStudy) -> None:
    document = _document(withheld_study)
    estimates = _estimates(withheld_study)
    withheld = estimates.loc[estimates["identifiable"].eq(False).fillna(False)]
    keys = set(withheld["estimand"] + "/" + withheld["group"])
    assert {"h1_micro_rule_b/all", "tost_en_pt/all", "model_rank_micro/lexical-reader"} <= keys
    # Every block marked not identifiable, in every section, holds no interval, p or verdict.
    assert list(withheld_numbers(document)) == []
    # The sections that restate a withheld estimand say so, with the estimates table's reason.
    reason = withheld.set_index(withheld["estimand"] + "/" + withheld["group"])["status"]
    rule_b = document["parse_rule"]["B"]["h1_micro"]
    assert rule_b["identifiable"] is False and rule_b["ci_low"] is None and rule_b["ci_high"] is None
    assert f"not identifiable: {rule_b['reason']}" == reason["h1_micro_rule_b/all"]
    equivalence = document["equivalence"]
    assert equivalence["identifiable"] is False and equivalence["equivalent"] is None
    assert f"not identifiable: {equivalence['reason']}" == reason["tost_en_pt/all"]
    for test in ("bootstrap", "paired_article_means"):
        block = equivalence[test]
        assert block["identifiable"] is False
        assert [k for k in SHOWN if block.get(k) is not None] == [], test
    for model, ranks in document["model_contrasts"]["ranks"].items():
        for gap, rank in ranks.items():
            assert rank["identifiable"] is False and rank["ci_low"] is None, (model, gap)
    # No block still carries an interval or p without saying whether it may be shown, in the
    # sections that restate the estimates table's estimands.
    for section in ("parse_rule", "equivalence", "model_contrasts", "h1"):
        for path, block in _blocks(document[section], section):
            if any(block.get(k) is not None for k in SHOWN):
                assert "identifiable" in block, path


def test_report_sections_show_no_withheld_interval_and_say_why(withheld_study: DemoStudy) -> None:
    for key in ("parse_rule", "equivalence", "model_contrasts"):
        text = _text(_section_html(withheld_study, key))
        assert not _INTERVAL.search(text), (key, _INTERVAL.search(text))
        assert not _P_VALUE.search(text), (key, _P_VALUE.search(text))
        assert "not identifiable" in text, key
    contrasts = _section_html(withheld_study, "model_contrasts")
    ranks = contrasts[contrasts.index("Rank per model") :]
    ranks = ranks[: ranks.index("</table>")]
    rows = re.findall(r"<tr[^>]*>", ranks.split("<tbody>", 1)[-1])
    assert rows and all('class="flagged"' in row for row in rows), rows
    # Each row's mark is the section note's letter, spoken (aria-label) as "not identifiable".
    assert ranks.count('aria-label="not identifiable (note ') == len(rows)


def test_leaderboard_withholds_what_the_estimates_table_withholds(withheld_study: DemoStudy) -> None:
    board = json.loads((Path(withheld_study.data_dir) / "leaderboard.json").read_text(encoding="utf-8"))
    assert board["models"]
    for row in board["models"]:
        assert row["identifiable"] is False and "too few articles" in row["reason"]
        shown = [k for k in row if k.endswith(("_ci_low", "_ci_high")) and row[k] is not None]
        assert shown == [], row
