"""``clcg run``'s closing hint names the data folder it ran on unless it is the default one.

After ``clcg run --data s3://bucket/prefix`` it printed ``(try: clcg query --named
clcg_by_language)``, which, typed as shown, queried ./clcg_data instead.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from rich.console import Console

from clcg_pipeline.cli import _run, build_parser
from clcg_pipeline.cli._common import dirs
from clcg_pipeline_tests.analysis.test_tie_groups import run_planted


def _hint(text: str) -> str:
    """The command inside the catalog line's ``(try: ...)``."""
    line = next(line for line in text.splitlines() if line.startswith("catalog: "))
    return line.split("(try: ", 1)[1].rstrip().removesuffix(")")


def _data_folder_of(command: str) -> str:
    """The data folder ``clcg query`` reads when ``command`` is typed as shown."""
    args = build_parser().parse_args(shlex.split(command)[1:])
    return dirs(args)[1]


def test_the_run_s_hint_names_a_folder_that_is_not_the_default(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "my results"
    folder.mkdir()
    (folder / "study_results.json").write_text(json.dumps(run_planted([0.0, 0.1])), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("CLCG_DATA_DIR", raising=False)
    console = Console(record=True, width=400)
    monkeypatch.setattr(_run, "console", console)
    _run._print_study_results(str(folder))
    hint = _hint(console.export_text())
    assert "--named clcg_by_language" in hint
    assert _data_folder_of(hint) == str(folder)


@pytest.mark.parametrize("data", ["s3://bucket/prefix", "s3://bucket/prefix/", "results/run 2"])
def test_a_hint_for_another_folder_reads_that_folder(tmp_path: Path, monkeypatch, data: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLCG_DATA_DIR", raising=False)
    assert _data_folder_of(_run.query_hint(data)) == data


def test_the_default_folder_is_not_named(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLCG_DATA_DIR", raising=False)
    for same in (str(tmp_path / "clcg_data"), "clcg_data", "./clcg_data/", f"file://{tmp_path}/clcg_data"):
        assert _run.query_hint(same) == "clcg query --named clcg_by_language", same
    monkeypatch.setenv("CLCG_DATA_DIR", "s3://bucket/prefix")
    assert _run.query_hint("s3://bucket/prefix") == "clcg query --named clcg_by_language"
    assert "--data" in _run.query_hint(str(tmp_path / "clcg_data"))
