"""Bad input, tried as a new user would (issue 18 item 8): one line, exit 2, nothing started.

Each case fails before anything runs: no progress bar, no Dagster instance, no data folder.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from clcg_pipeline_tests.conftest import DEFAULT_CONFIG, run_clcg

LINUX = pytest.mark.skipif(sys.platform != "linux", reason="needs Linux's /proc and /sys")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "CLCG_DATA_DIR"}
    return {**env, "DAGSTER_HOME": str(tmp_path / "dagster_home"), **extra}


def assert_usage_error(returncode: int | None, out: str, err: str, prefix: str, tmp_path: Path) -> str:
    """Exit 2, one ``prefix...`` line on stderr, nothing on stdout, nothing made in ``tmp_path``."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert returncode == 2, (out, err)
    assert len(lines) == 1 and lines[0].startswith(prefix), err
    assert "Traceback" not in err and out == ""  # no progress bar, no table
    assert not (tmp_path / "dagster_home").exists() and not (tmp_path / "clcg_data").exists()
    return lines[0]


# The config folder is missing too: the bad option must be what is said, before the config is read.
BAD_NUMBERS = [
    (["run", "--budget", "-1"], "argument --budget: expected a number of 0 or more, got '-1'"),
    (["run", "--budget=nan"], "argument --budget: expected a number of 0 or more, got 'nan'"),
    (["run", "--budget", "ten"], "argument --budget: expected a number of 0 or more, got 'ten'"),
    (["run", "--parallel", "0"], "argument --parallel: expected a whole number of 1 or more, got '0'"),
    (["run", "--parallel", "1.5"], "argument --parallel: expected a whole number of 1 or more, got '1.5'"),
    (
        ["estimate", "--scores", "s.parquet", "--out", "o.json", "--replicates", "0"],
        "argument --replicates: expected a whole number of 1 or more, got '0'",
    ),
    (
        ["estimate", "--scores", "s.parquet", "--out", "o.json", "--seed", "-5"],
        "argument --seed: expected a whole number of 0 or more, got '-5'",
    ),
]


@pytest.mark.parametrize(("argv", "says"), BAD_NUMBERS, ids=[" ".join(argv) for argv, _ in BAD_NUMBERS])
def test_a_bad_number_is_one_argparse_line(
    argv: list[str], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from clcg_pipeline.cli import main

    monkeypatch.chdir(tmp_path)  # the default data folder would be tmp_path/clcg_data
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.delenv("CLCG_DATA_DIR", raising=False)
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--config", str(tmp_path / "no-config")])
    captured = capsys.readouterr()
    line = assert_usage_error(stopped.value.code, captured.out, captured.err, "error: argument ", tmp_path)
    assert says in line and f"clcg {argv[0]} --help" in line


@pytest.mark.parametrize(
    ("argv", "name", "value"),
    [
        (["run", "--budget", "0"], "budget", 0.0),  # cached calls only
        (["run", "--budget", "2.5"], "budget", 2.5),
        (["run", "--parallel", "1"], "parallel", 1),
        (["estimate", "--scores", "s", "--out", "o", "--seed", "0"], "seed", 0),
        (["estimate", "--scores", "s", "--out", "o", "--replicates", "1"], "replicates", 1),
    ],
)
def test_edge_values_are_accepted(argv: list[str], name: str, value: float) -> None:
    from clcg_pipeline.cli import build_parser

    parsed = getattr(build_parser().parse_args(argv), name)
    assert parsed == value and type(parsed) is type(value)


def test_the_reported_cases_as_typed(tmp_path: Path) -> None:
    """`--parallel 0` drew a progress bar and exited 1, `--budget -1` ran 20 runs."""
    env = _env(tmp_path)
    for option, value in (("--parallel", "0"), ("--budget", "-1")):
        ran = run_clcg("run", "--config", str(DEFAULT_CONFIG), option, value, env=env, cwd=tmp_path)
        line = assert_usage_error(ran.returncode, ran.stdout, ran.stderr, "error: argument ", tmp_path)
        assert f"argument {option}" in line and repr(value) in line


@LINUX
@pytest.mark.parametrize("how", ["--data", "--data file://", "CLCG_DATA_DIR"])
def test_an_unwritable_data_folder_is_one_line_before_dagster(how: str, tmp_path: Path) -> None:
    """Before, `--data /proc/forbidden` failed inside Dagster with a FileNotFoundError."""
    given = ("file://" if how.endswith("file://") else "") + "/proc/forbidden"
    extra = {"CLCG_DATA_DIR": given} if how == "CLCG_DATA_DIR" else {}
    args = ["--data", given] if how.startswith("--data") else []
    ran = run_clcg("run", "--config", str(DEFAULT_CONFIG), *args, env=_env(tmp_path, **extra), cwd=tmp_path)
    line = assert_usage_error(ran.returncode, ran.stdout, ran.stderr, "error: ", tmp_path)
    assert line.startswith(f"error: cannot write the data folder {given}: cannot create it in /proc (")
    assert "FileNotFoundError" not in line


def _run_in_process(data: str, tmp_path: Path, capsys) -> str:
    from clcg_pipeline.cli import main

    code = main(["run", "--config", str(DEFAULT_CONFIG), "--data", data])
    captured = capsys.readouterr()
    return assert_usage_error(code, captured.out, captured.err, "error: ", tmp_path)


def test_a_data_folder_under_a_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    afile = tmp_path / "notes.txt"
    afile.write_text("x", encoding="utf-8")
    line = _run_in_process(str(afile / "data"), tmp_path, capsys)
    assert line == f"error: cannot write the data folder {afile / 'data'}: {afile} is not a folder"
    line = _run_in_process(str(afile), tmp_path, capsys)
    assert line == f"error: cannot write the data folder {afile}: it is not a folder"
    assert not (afile.parent / "data").exists()


def test_a_read_only_data_folder_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    if os.geteuid() == 0:  # root writes anyway; fail the way a read-only folder fails for a user

        def refuse(*args: object, dir: str | None = None, **kwargs: object) -> str:
            raise PermissionError(13, "Permission denied", f"{dir}/.clcg-probe-x")

        monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    try:
        existing = _run_in_process(str(folder), tmp_path, capsys)
        inside = _run_in_process(str(folder / "data"), tmp_path, capsys)
    finally:
        folder.chmod(0o755)
    assert existing == f"error: cannot write the data folder {folder}: Permission denied"
    reason = f"cannot create it in {folder} (Permission denied)"
    assert inside == f"error: cannot write the data folder {folder / 'data'}: {reason}"
    assert list(folder.iterdir()) == []


@LINUX
@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="no /sys/kernel")
def test_an_existing_folder_nobody_may_write_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    # /sys refuses new entries even to root: a real unwritable folder, with no mock.
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    line = _run_in_process("/sys/kernel", tmp_path, capsys)
    assert line.startswith("error: cannot write the data folder /sys/kernel: ")


def test_writable_local_and_remote_folders_pass_and_nothing_is_made(tmp_path: Path) -> None:
    from clcg_pipeline.cli import check_data_folder

    check_data_folder(str(tmp_path / "new" / "data"))
    check_data_folder(f"file://{tmp_path}/other")
    check_data_folder(str(tmp_path))
    check_data_folder("s3://clcg-no-such-bucket/data")  # not checked: that would cost a request
    assert list(tmp_path.iterdir()) == []


def test_query_without_a_question_is_still_a_usage_error(tmp_path: Path, capsys) -> None:
    from clcg_pipeline.cli import main

    code = main(["query", "--data", str(tmp_path / "clcg_data")])
    captured = capsys.readouterr()
    line = assert_usage_error(code, captured.out, captured.err, "error: ", tmp_path)
    assert line == "error: give a SQL string, --named NAME or --list"


def test_only_languages_no_source_covers_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """`--languages quy` on the demo (no quy file): nothing could run, so nothing starts."""
    from clcg_pipeline.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.delenv("CLCG_DATA_DIR", raising=False)
    code = main(["run", "--config", str(DEFAULT_CONFIG), "--languages", "quy,ay"])
    captured = capsys.readouterr()
    line = assert_usage_error(code, captured.out, captured.err, "error: --languages: ", tmp_path)
    assert line == (
        "error: --languages: no source has a file for quy, ay: the corpus source 'demo' (demo) "
        "covers none of the selected languages"
    )
