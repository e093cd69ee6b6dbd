"""One error convention, --version, plain help, unwrapped piped output and `clcg run` outside a
project (issue 34 item 7), and the power plan's floor at study.min_articles (item 6) as printed."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from clcg_pipeline_tests.conftest import DEFAULT_CONFIG, PROJECT_ROOT
from clcg_pipeline_tests.test_cli_usage import assert_usage_error


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with no assets_config/, and no $CLCG_CONFIG_DIR or $CLCG_DATA_DIR."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.delenv("CLCG_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CLCG_DATA_DIR", raising=False)
    return tmp_path


def _main(argv: list[str]) -> int:
    """``clcg ARGV`` in this process; argparse's own exits become return codes."""
    from clcg_pipeline.cli import main

    try:
        return main(argv)
    except SystemExit as stopped:
        return int(stopped.code or 0)


# The mistakes the issue typed: before, the first two exited 1, the last two 2, with two prefixes.
MISTAKES = [
    (["--models", "lexical-readr"], "error: --models: unknown lexical-readr; the config has "),
    (["--languages", "xx"], "error: --languages: unknown xx; the config has en, pt, "),
    (["--languages", "eu"], "error: --languages: no source has a file for eu"),
    (["--budget", "abc"], "error: argument --budget: expected a number of 0 or more, got 'abc'"),
]


@pytest.mark.parametrize(("extra", "says"), MISTAKES, ids=[" ".join(argv) for argv, _ in MISTAKES])
def test_every_usage_error_is_exit_2_and_one_error_line(
    extra: list[str], says: str, outside: Path, capsys: pytest.CaptureFixture
) -> None:
    code = _main(["run", "--config", str(DEFAULT_CONFIG), *extra])
    captured = capsys.readouterr()
    line = assert_usage_error(code, captured.out, captured.err, "error: ", outside)
    assert line.startswith(says) and "clcg run: error" not in line


def test_an_unknown_model_to_plan_is_a_usage_error(outside: Path, capsys: pytest.CaptureFixture) -> None:
    config = ["--config", str(DEFAULT_CONFIG), "--data", str(outside / "d")]
    assert _main(["plan", *config, "--models", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: --models: unknown nope")
    power = ["plan", *config, "--power", "--effect", "0.02", "--compare-models", "lexical-reader,nope"]
    assert _main(power) == 2
    assert capsys.readouterr().err.startswith("error: --compare-models: unknown nope")


def test_a_run_error_is_exit_1_with_the_same_prefix(outside: Path, capsys: pytest.CaptureFixture) -> None:
    assert _main(["report", "--data", str(outside / "d")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_version_comes_from_the_package_metadata(capsys: pytest.CaptureFixture) -> None:
    assert _main(["--version"]) == 0
    assert capsys.readouterr().out == f"clcg {version('clcg-pipeline')}\n"


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parser and every subcommand's, nested ones included (``annotations push``)."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_parsers(sub))
    return found


def test_help_has_no_markup() -> None:
    """The help showed ``clcg`` with its RST backticks, and `clcg run` with Markdown's."""
    from clcg_pipeline.cli import build_parser

    parsers = _parsers(build_parser())
    assert len(parsers) > 10
    for parser in parsers:
        text = parser.format_help()
        assert "`" not in text, (parser.prog, [line for line in text.splitlines() if "`" in line])
    assert "The clcg command: run, plan" in build_parser().format_help()


def _planted_results(folder: Path) -> Path:
    """A study_results.json with two scored targets and eleven panel languages without data."""
    missing = ["eu", "ne", "ceb", "xh", "sm", "fon", "gn", "mg", "am", "ay", "quy"]
    estimate = {"estimate": 0.1, "ci_low": 0.05, "ci_high": 0.15, "n": 40, "identifiable": True}
    results = {
        "h1": {"by_language": {"sw": estimate, "ka": estimate}, "h1_micro": estimate},
        "languages": [
            {"iso": "en", "name": "English", "role": "reference", "joshi_class": 5},
            {"iso": "pt", "name": "Portuguese", "role": "baseline", "joshi_class": 4},
            {"iso": "sw", "name": "Swahili", "role": "target", "joshi_class": 2},
            {"iso": "ka", "name": "Georgian", "role": "target", "joshi_class": 3},
            *({"iso": iso, "name": f"Language {iso}", "role": "target"} for iso in missing),
        ],
        "languages_without_data": [
            {"iso": iso, "reason": "no corpus version (the source has no text in this language)"}
            for iso in missing
        ],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "study_results.json").write_text(json.dumps(results), encoding="utf-8")
    return folder


def test_piped_output_is_not_wrapped_and_names_each_language_without_data_once(tmp_path: Path) -> None:
    """Piped, the caption wrapped at the table's 74 columns, and the 11 languages came twice."""
    data = _planted_results(tmp_path / "d")
    code = "import sys\nfrom clcg_pipeline.cli._run import _print_study_results as show\nshow(sys.argv[1])"
    env = {**os.environ, "COLUMNS": "80"}
    ran = subprocess.run(
        [sys.executable, "-c", code, str(data)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    no_data = [line for line in lines if "Language quy" in line or "quy" in line.split(":")[0]]
    assert len(no_data) == 1, ran.stdout  # the list once, on one line
    assert no_data[0].startswith("no data (11 panel languages), no corpus version (the source has no text")
    assert no_data[0].endswith("Language ay (ay), Language quy (quy)")
    assert sum(line.count("(eu)") + line.count(" eu,") for line in lines) == 1
    assert any(line.startswith("results: ") and line.endswith("study_results.json") for line in lines)


def test_run_outside_a_project_names_its_config_data_and_instance(
    outside: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Before, it quietly used the package's config and instance and wrote into ./clcg_data."""
    import clcg_pipeline.cli._run as run

    # The run itself is not the point: the folder counts as up to date, and nothing is printed.
    monkeypatch.setattr(run, "_complete_run_holds", lambda *args: 3)
    monkeypatch.setattr(run, "_print_study_results", lambda data_dir: None)
    assert _main(["run"]) == 0
    captured = capsys.readouterr()
    (note,) = captured.err.splitlines()
    assert note.startswith(f"note: no assets_config/ in {outside} and no --config or $CLCG_CONFIG_DIR: ")
    assert f"the config {PROJECT_ROOT / 'assets_config'}," in note
    assert f"the data folder {outside / 'clcg_data'} " in note
    assert note.endswith(f"the Dagster instance {outside / 'dagster_home'}")
    # With the config named, or from inside a project, nothing extra is said.
    assert _main(["run", "--config", str(DEFAULT_CONFIG)]) == 0
    assert capsys.readouterr().err == ""
    (outside / "assets_config").symlink_to(DEFAULT_CONFIG)
    assert _main(["run"]) == 0
    assert capsys.readouterr().err == ""


def test_run_outside_a_project_with_no_config_in_reach_refuses(
    outside: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import clcg_pipeline.config as config

    # An install whose packaged config is gone: nothing is in reach.
    monkeypatch.setattr(config, "default_config_dir", lambda: outside / "no-packaged-config")
    code = _main(["run"])
    captured = capsys.readouterr()
    line = assert_usage_error(code, captured.out, captured.err, "error: ", outside)
    assert line == (
        f"error: no config in reach: {outside} has no assets_config/ and neither --config nor "
        "$CLCG_CONFIG_DIR is given"
    )


def test_plan_power_says_when_the_minimum_binds(
    demo_config_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """`--effect 0.05` answered 4 articles while study.min_articles is 10."""
    from clcg_pipeline.config import load_config
    from clcg_pipeline.storage import partition_dir, write_frame
    from clcg_pipeline_tests.test_cli import _band_scores
    from clcg_pipeline_tests.test_cli_power import varied_pilot

    # Articles that differ: a pilot whose gap does not vary has no power to plan (test_cli_power.py).
    scores = varied_pilot(
        _band_scores(demo_config_dir, "lexical-reader", {"en": 0.8, "pt": 0.7, "ka": 0.5, "sw": 0.4})
    )
    for (language, model), part in scores.groupby(["language", "model"]):
        where = {"language": language, "model": model}
        write_frame(
            partition_dir(tmp_path / "pilot", "scores", where) / "data.parquet", part, contract="scores"
        )
    base = ["plan", "--power", "--config", str(demo_config_dir), "--data", str(tmp_path / "pilot")]
    minimum = load_config(demo_config_dir).study.min_articles
    assert _main([*base, "--effect", "0.3", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["articles_needed"] == minimum and plan["articles_for_power"] < minimum
    assert _main([*base, "--effect", "0.3"]) == 0
    shown = capsys.readouterr().out
    assert f"study.min_articles = {minimum} binds" in shown and "minimum binds" in shown


def test_several_reasons_name_each_language_once_under_its_reason() -> None:
    from rich.console import Console

    from clcg_pipeline.report import format_h1_table

    results = {
        "h1": {"by_language": {}},
        "languages": [{"iso": "eu", "name": "Basque"}, {"iso": "fon", "name": "Fon"}],
        "languages_without_data": [
            {"iso": "eu", "reason": "no corpus version"},
            {"iso": "fon", "reason": "no corpus version"},
            {"iso": "gn", "reason": "every answer failed"},
        ],
    }
    langs = {"eu": {"name": "Basque"}, "fon": {"name": "Fon"}}
    table = format_h1_table(results["h1"], langs, results=results)
    console = Console(file=io.StringIO(), width=300, color_system=None)
    console.print(table.caption)
    lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    block = lines[lines.index("no data (3 panel languages):") :][:3]
    assert block == [
        "no data (3 panel languages):",
        "  no corpus version: Basque (eu), Fon (fon)",
        "  every answer failed: gn",
    ]
    assert sum(line.count("eu") for line in lines) == 1  # each language named once
