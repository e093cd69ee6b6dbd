"""Issue 19, push and pull without a server: settings, bad inputs, an unreachable server, the guard
that keeps a test's Label Studio from outliving it. (The round trip itself, with a real Label
Studio: test_label_studio_live.py.)"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clcg_pipeline.cli._annotations import add_annotation_parsers, cmd_pull, cmd_push
from clcg_pipeline.validation.human._exchange_format import EXPORT_DIR, LS_PAIR_TASKS, LS_SINGLE_TASKS
from clcg_pipeline.validation.human._export import export_files
from clcg_pipeline.validation.human._label_studio import (
    TOKEN_ENV,
    URL_ENV,
    LabelStudioError,
    connection_from_env,
    export_file_name,
    pull_annotation_exports,
    push_annotation_projects,
    read_project_specs,
)
from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy
from clcg_pipeline_tests.validation.annotation_world import checklist_keypoints, small_sample
from clcg_pipeline_tests.validation.label_studio_server import free_port

TOKEN = "tok-3f9a1c5e7b2d4f6a8c0e"


@pytest.fixture(scope="module")
def exported() -> dict[str, bytes]:
    sample = small_sample()
    return export_files(sample, checklist_keypoints(sample), load_taxonomy().collapsed_labels)


def _write_export(data_dir: Path, files: dict[str, bytes]) -> Path:
    folder = data_dir / EXPORT_DIR
    folder.mkdir(parents=True)
    for name, payload in files.items():
        (folder / name).write_bytes(payload)
    return folder


def test_the_url_and_token_come_from_the_environment_and_the_token_is_never_shown() -> None:
    with pytest.raises(LabelStudioError, match=URL_ENV):
        connection_from_env({TOKEN_ENV: TOKEN})
    with pytest.raises(LabelStudioError, match=TOKEN_ENV) as missing:
        connection_from_env({URL_ENV: "http://127.0.0.1:9"})
    assert "http://127.0.0.1:9" in str(missing.value)
    with pytest.raises(LabelStudioError, match="http:// or https://"):
        connection_from_env({URL_ENV: "127.0.0.1:8080", TOKEN_ENV: TOKEN})
    conn = connection_from_env({URL_ENV: " http://127.0.0.1:8080/ ", TOKEN_ENV: TOKEN})
    assert conn.url == "http://127.0.0.1:8080"
    assert TOKEN not in repr(conn) and TOKEN not in str(conn)
    assert conn.scrub(f"header Token {TOKEN}") == "header Token ***"


def test_the_projects_are_read_from_the_export_with_the_designs_overlap(tmp_path: Path, exported) -> None:
    _write_export(tmp_path, exported)
    specs = read_project_specs(str(tmp_path), "demo", annotators_per_item=5)
    assert [s.title for s in specs] == ["demo · single", "demo · pair"]  # no fill tasks exported
    single = specs[0]
    assert len(single.tasks) == len(json.loads(exported[LS_SINGLE_TASKS]))
    # The sample's planned annotators (three per task), not the fallback; attention checks: one each.
    assert single.max_annotations == 3 and single.fewer_planned == 3  # one check per form of 10 (issue 36)
    assert specs[1].max_annotations == 3 and specs[1].fewer_planned == 0
    assert single.label_config.startswith("<View>")


def test_a_push_stops_on_a_missing_or_bad_export_before_label_studio_is_called(
    tmp_path: Path, config_dir: Path, exported, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)  # not even the connection is looked at first
    with pytest.raises(LabelStudioError, match="annotation_exports") as missing:
        push_annotation_projects(str(config_dir), str(tmp_path))
    assert LS_SINGLE_TASKS in str(missing.value)
    tasks = json.loads(exported[LS_PAIR_TASKS])
    tasks[1]["data"]["task_id"] = tasks[0]["data"]["task_id"]
    folder = _write_export(tmp_path, {**exported, LS_PAIR_TASKS: json.dumps(tasks).encode()})
    with pytest.raises(LabelStudioError) as duplicate:
        push_annotation_projects(str(config_dir), str(tmp_path))
    message = str(duplicate.value)
    assert str(folder / LS_PAIR_TASKS) in message and "task 2" in message and "data.task_id" in message


@pytest.mark.parametrize("command", [push_annotation_projects, pull_annotation_exports])
def test_an_unreachable_label_studio_is_named_never_the_token(
    tmp_path: Path, config_dir: Path, exported, command, caplog: pytest.LogCaptureFixture
) -> None:
    _write_export(tmp_path, exported)
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(LabelStudioError) as failed:
        command(str(config_dir), str(tmp_path), environ={URL_ENV: url, TOKEN_ENV: TOKEN})
    message = str(failed.value)
    assert url in message and URL_ENV in message and "unreachable" in message
    assert TOKEN not in message and TOKEN not in caplog.text
    assert not (tmp_path / "annotations" / "inbox").exists()  # nothing written


def test_the_annotations_commands_are_wired(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="clcg")
    add_annotation_parsers(parser.add_subparsers(dest="command", required=True))
    push = parser.parse_args(["annotations", "push", "--data", str(tmp_path), "--study", "pilot"])
    assert push.func is cmd_push and push.study == "pilot" and push.data == str(tmp_path)
    pull = parser.parse_args(["annotations", "pull"])
    assert pull.func is cmd_pull and pull.study is None and pull.config is None
    with pytest.raises(SystemExit):
        parser.parse_args(["annotations"])  # push or pull is required


def test_export_file_names_say_the_project_and_the_time() -> None:
    import datetime as dt

    at = dt.datetime(2026, 3, 1, 10, 0, 5, tzinfo=dt.UTC)
    assert (
        export_file_name("Demo Study", "single", at) == "label_studio_demo-study_single_20260301T100005Z.json"
    )
    later = export_file_name("Demo Study", "single", at + dt.timedelta(days=1))
    assert later > export_file_name("Demo Study", "single", at)  # the import reads name order


_PARENT = """
import sys, time
from pathlib import Path
from clcg_pipeline_tests.validation.label_studio_server import start_guarded
child = start_guarded(["sleep", "600"], {"PATH": "/usr/bin:/bin"}, Path(sys.argv[1]))
print(child.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_server_started_by_a_test_dies_with_a_test_killed_by_sigkill(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(tmp_path / "log")], stdout=subprocess.PIPE, start_new_session=True
    )
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert os.getpgid(child) == child  # its own process group: a Ctrl-C at the terminal skips it
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(child):
            time.sleep(0.05)
        assert not _alive(child), "the guarded child outlived its SIGKILLed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        if child and _alive(child):
            os.kill(child, signal.SIGKILL)  # never left behind, even when the test fails


def _alive(pid: int) -> bool:
    """Running (a zombie awaiting its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_the_cli_names_the_same_variables_as_the_client() -> None:
    # The CLI keeps its own copy of the names so that `clcg --help` needs no Dagster import.
    from clcg_pipeline.cli import _annotations
    from clcg_pipeline.validation.human import TOKEN_ENV, URL_ENV

    assert (_annotations.URL_ENV, _annotations.TOKEN_ENV) == (URL_ENV, TOKEN_ENV)
