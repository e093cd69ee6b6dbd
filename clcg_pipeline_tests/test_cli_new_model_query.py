"""``clcg run``'s new-model lines end with a ``clcg query`` command listing every difference (more
than ten other models); typed as printed, it read ./clcg_data whatever folder the run was on.
Now it names ``--data <folder>`` unless the folder is the default one (as the catalog hint)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from rich.console import Console

from clcg_pipeline.cli import _run, build_parser, cmd_query
from clcg_pipeline.cli._common import dirs
from clcg_pipeline.report._new_model_section import ALL_SHOWN_UP_TO
from clcg_pipeline.results import split_model_pairs, write_model_pairs
from clcg_pipeline.storage import build_catalog
from clcg_pipeline_tests.report.test_new_model_lines_at_scale import study

N_MODELS = ALL_SHOWN_UP_TO + 5


def _study_folder(folder: Path) -> None:
    """A folder whose results have a new model among ``N_MODELS`` and whose catalog has its pairs."""
    folder.mkdir(parents=True)
    document = study(N_MODELS, 7, every_pair=True)
    write_model_pairs(split_model_pairs(document), str(folder))
    build_catalog(str(folder))
    (folder / "study_results.json").write_text(json.dumps(document), encoding="utf-8")


def _printed_command(folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The command ending the run's new-model lines, as printed for ``folder``."""
    console = Console(record=True, width=80)  # narrow: the command must not be wrapped
    monkeypatch.setattr(_run, "console", console)
    _run._print_study_results(str(folder))
    line = next(line for line in console.export_text().splitlines() if line.startswith("  ... and "))
    return line.split("model_a minus model_b: ", 1)[1]


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder, with no ``$CLCG_DATA_DIR``: the default folder is ./clcg_data here."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("CLCG_DATA_DIR", raising=False)
    return cwd


def test_the_command_for_another_folder_lists_that_folder_s_pairs(
    tmp_path: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "my results"
    _study_folder(folder)
    command = _printed_command(folder, monkeypatch)
    assert f"--data {shlex.quote(str(folder))}" in command
    # Run as a shell would hand it over, without a shell: it reads that folder's catalog.
    args = build_parser().parse_args([*shlex.split(command)[1:], "--format", "csv"])
    assert dirs(args)[1] == str(folder)
    capsys.readouterr()
    assert cmd_query(args) == 0
    listed = capsys.readouterr().out.strip().splitlines()
    assert listed[0].startswith("model_a,model_b,estimate") and len(listed) - 1 == N_MODELS - 1


def test_the_command_for_the_default_folder_names_none(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = elsewhere / "clcg_data"
    _study_folder(folder)
    command = _printed_command(folder, monkeypatch)
    assert "--data" not in command and shlex.split(command)[:2] == ["clcg", "query"]
    assert dirs(build_parser().parse_args(shlex.split(command)[1:]))[1] == str(folder)
