"""Issue 19, push and pull with a REAL Label Studio (PyPI ``label-studio``, on 127.0.0.1).

One server for the module (start-up runs its migrations, ~25 s), started and stopped here, in its
own process group with a parent-death signal (label_studio_server.py). Skipped when no server is
installed (``make setup-label-studio``), unless CLCG_REQUIRE_LABEL_STUDIO is set (CI): then it fails.

The round trip of a real team: push the projects (twice: nothing duplicated), two annotators
rate, pull (a whole-project JSON export), import; day two: a second annotator on a task already
rated, one rating changed, pull and import again: the unchanged ratings skipped, the new one
added, the changed one a revision. The token appears in no file and no log.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.cli._annotations import add_annotation_parsers
from clcg_pipeline.validation.human._annotators import DEFAULT_INSTANCE, LS_PREFIX
from clcg_pipeline.validation.human._exchange_format import (
    EXPORT_DIR,
    LS_PAIR_TASKS,
    LS_SINGLE_CONFIG,
    LS_SINGLE_TASKS,
)
from clcg_pipeline.validation.human._export import export_files
from clcg_pipeline.validation.human._import import ImportResult, import_annotations
from clcg_pipeline.validation.human._label_studio import (
    TOKEN_ENV,
    URL_ENV,
    LabelStudioError,
    connect,
    connection_from_env,
    find_project,
    pull_annotation_exports,
    push_annotation_projects,
)
from clcg_pipeline.validation.human.sensors import read_annotator_map_file, read_inbox
from clcg_pipeline.validation.taxonomy._label_set import load_taxonomy
from clcg_pipeline_tests.validation.annotation_world import (
    control_answers,
    stored_values,
)
from clcg_pipeline_tests.validation.label_studio_server import (
    BIN_ENV,
    REQUIRE_ENV,
    VENV_BIN,
    LabelStudioServer,
    label_studio_bin,
    sign_up,
    start_label_studio,
)

# The server takes ~25-40 s to start: the module starts first (conftest orders slow tests first).
pytestmark = pytest.mark.slow

CATEGORIES = load_taxonomy().collapsed_labels
DAY_ONE = dt.datetime(2026, 3, 1, 18, 0, tzinfo=dt.UTC)
DAY_TWO = DAY_ONE + dt.timedelta(days=1)
#: The labelling configs' object each control points at (export.label_config_*).
TO_NAME = {"question_valid": "question", "preference": "question", "confidence": "question"}
RESULT_TYPE = {"adequacy": "rating", "confidence": "rating", "comment": "textarea"}


@pytest.fixture(scope="module")
def label_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabelStudioServer]:
    executable = label_studio_bin()
    if executable is None:
        reason = f"no Label Studio server: neither {VENV_BIN} (make setup-label-studio) nor ${BIN_ENV}"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set but {reason}")
        pytest.skip(reason)
    server = start_label_studio(executable, tmp_path_factory.mktemp("label-studio"))
    print(f"\nLabel Studio {server.url} answered {server.startup_s:.1f} s after start")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def study(tmp_path: Path, sample, keypoints) -> Path:
    """A data folder holding what the annotation_exports asset writes."""
    data = tmp_path / "data"
    (data / EXPORT_DIR).mkdir(parents=True)
    for name, payload in export_files(sample, keypoints, CATEGORIES).items():
        (data / EXPORT_DIR / name).write_bytes(payload)
    return data


@pytest.fixture
def ls_env(label_studio: LabelStudioServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in label_studio.env().items():
        monkeypatch.setenv(name, value)
    return label_studio.env()


def _result(name: str, value: Any) -> dict[str, Any]:
    """One ``result[]`` entry as Label Studio's editor submits it for control ``name``."""
    kind = RESULT_TYPE.get(name, "choices")
    key = {"rating": "rating", "textarea": "text", "choices": "choices"}[kind]
    payload = value if kind == "rating" else (list(value) if name == "keypoints" else [value])
    return {
        "from_name": name,
        "to_name": TO_NAME.get(name, "response"),
        "type": kind,
        "value": {key: payload},
    }


def _results(answers: dict[str, Any]) -> list[dict[str, Any]]:
    return [_result(n, v) for n, v in answers.items() if not (n == "keypoints" and not v)]


class Team:
    """The team's side, through the SDK: annotators, the tasks they rate, what they answer."""

    def __init__(self, client: Any, sample: pd.DataFrame, keypoints: pd.DataFrame) -> None:
        self.client, self.sample, self.keypoints = client, sample, keypoints
        self.answers: dict[tuple[str, int], dict[str, Any]] = {}  # (task_id, user) -> answers

    def task_ids(self, project_id: int) -> dict[str, int]:
        """``task_id`` -> Label Studio task id."""
        return {t.data["task_id"]: t.id for t in self.client.tasks.list(project=project_id, page_size=500)}

    def rate(self, ls_task: int, task_id: str, user: int, seed: int) -> int:
        """An annotation by ``user``, as submitted from the editor; its id."""
        answers = control_answers(self.sample, self.keypoints, task_id, seed)
        made = self.client.annotations.create(
            id=ls_task, result=_results(answers), completed_by=user, lead_time=20.0 + seed
        )
        self.answers[(task_id, user)] = answers
        return int(made.id)

    def change(self, annotation: int, task_id: str, user: int, seed: int) -> None:
        answers = control_answers(self.sample, self.keypoints, task_id, seed)
        self.client.annotations.update(id=annotation, result=_results(answers))
        self.answers[(task_id, user)] = answers


class Desk:
    """What the annotation import asset keeps between runs (its log and archive), over the inbox."""

    def __init__(self, data: Path, sample: pd.DataFrame, keypoints: pd.DataFrame) -> None:
        self.data, self.sample, self.keypoints = data, sample, keypoints
        self.log = pd.DataFrame()
        self.archive: dict[str, bytes] = {}

    def run(self, when: dt.datetime) -> ImportResult:
        result = import_annotations(
            read_inbox(self.data / "annotations" / "inbox"),
            self.log,
            self.archive.get,
            self.sample,
            self.keypoints,
            CATEGORIES,
            imported_at=when.isoformat(timespec="seconds"),
            annotator_map=read_annotator_map_file(str(self.data)),
        )
        self.log = result.imports
        self.archive.update({f.sha256: f.data for f in result.to_archive})
        return result


def _run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="clcg")
    add_annotation_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return int(args.func(args))


def _single_tasks(sample: pd.DataFrame) -> list[str]:
    return sample.loc[sample["kind"] == "single", "task_id"].tolist()


def test_push_pull_and_import_round_trip_over_two_days(
    label_studio: LabelStudioServer,
    ls_env: dict[str, str],
    study: Path,
    config_dir: Path,
    sample,
    keypoints,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    lines: list[str] = []
    data, config = str(study), str(config_dir)
    exported_single = json.loads((study / EXPORT_DIR / LS_SINGLE_TASKS).read_text())
    exported_pair = json.loads((study / EXPORT_DIR / LS_PAIR_TASKS).read_text())

    # Push, through the command; then again: nothing duplicated.
    assert _run_cli("annotations", "push", "--config", config, "--data", data) == 0
    pushed_out = capsys.readouterr().out
    assert "'demo · single'" in pushed_out and "created" in pushed_out and label_studio.url in pushed_out
    again = push_annotation_projects(config, data, log=lines.append)
    assert [(r.kind, r.created, r.tasks_added, r.tasks_differing) for r in again] == [
        ("single", False, 0, 0),
        ("pair", False, 0, 0),
    ]
    assert [r.tasks_present for r in again] == [len(exported_single), len(exported_pair)]
    conn = connection_from_env()
    client = connect(conn)
    titles = [p.title for p in client.projects.list()]
    assert titles.count("demo · single") == 1 and titles.count("demo · pair") == 1
    single = find_project(client, conn, "demo · single")
    assert single.maximum_annotations == 3 and single.overlap_cohort_percentage == 100
    assert single.sampling == "Sequential sampling"
    team = Team(client, sample, keypoints)
    in_ls = team.task_ids(single.id)
    assert sorted(in_ls) == sorted(t["data"]["task_id"] for t in exported_single)  # each task once
    # Label Studio numbers the tasks in import order: the checks where the export laid them out.
    assert sorted(in_ls, key=in_ls.__getitem__) == [t["data"]["task_id"] for t in exported_single]

    # Day one: two annotators (users of the instance) rate.
    ann1 = client.users.create(email="ann1@clcg.invalid", username="ann1").id
    ann2 = client.users.create(email="ann2@clcg.invalid", username="ann2").id
    t1, t2 = _single_tasks(sample)[:2]
    a11 = team.rate(in_ls[t1], t1, ann1, seed=1)
    team.rate(in_ls[t1], t1, ann2, seed=2)
    team.rate(in_ls[t2], t2, ann1, seed=3)
    pair = find_project(client, conn, "demo · pair")
    p1 = exported_pair[0]["data"]["task_id"]
    team.rate(team.task_ids(pair.id)[p1], p1, ann2, seed=4)

    pulled = pull_annotation_exports(config, data, log=lines.append, now=DAY_ONE)
    assert [(r.kind, r.annotations) for r in pulled] == [("single", 3), ("pair", 1)]
    inbox = study / "annotations" / "inbox"
    day_one_single = inbox / "label_studio_demo_single_20260301T180000Z.json"
    assert pulled[0].file == str(day_one_single)
    export = json.loads(day_one_single.read_text())
    assert len(export) == len(exported_single)  # the whole project, tasks without annotations too
    assert {a["completed_by"] for t in export for a in t["annotations"]} == {ann1, ann2}

    desk = Desk(study, sample, keypoints)
    first = desk.run(DAY_ONE)
    log = first.imports.set_index("file")
    assert log.loc[day_one_single.name, ["status", "imported", "skipped", "revised"]].tolist() == [
        "accepted",
        3,
        0,
        0,
    ]
    _assert_current(first.annotations, team)

    # Day two: a second annotator on t2 (already rated), ann1 changes their rating of t1.
    team.rate(in_ls[t2], t2, ann2, seed=5)
    team.change(a11, t1, ann1, seed=6)
    pulled_again = pull_annotation_exports(config, data, log=lines.append, now=DAY_TWO)
    assert [(r.kind, r.annotations) for r in pulled_again] == [("single", 4), ("pair", 1)]
    day_two_single = Path(pulled_again[0].file)
    assert day_two_single.name == "label_studio_demo_single_20260302T180000Z.json"
    assert day_one_single.exists()  # day one's file stays: the import skips what it has seen

    second = desk.run(DAY_TWO)
    log = second.imports.set_index("file")
    assert log.loc[
        day_two_single.name, ["status", "records", "imported", "skipped", "revised", "refused"]
    ].tolist() == [
        "accepted",
        4,
        1,
        2,
        1,
        0,
    ], log.loc[day_two_single.name, "error"]
    # The pair project did not change: its export again holds only the rating imported on day one.
    pair_two = log.loc[Path(pulled_again[1].file).name]
    assert pair_two[["status", "imported", "skipped", "revised", "refused"]].tolist() == [
        "duplicate",
        0,
        1,
        0,
        0,
    ]
    assert len(second.annotations) == 5
    _assert_current(second.annotations, team)
    changed = second.revisions[
        (second.revisions["task_id"] == t1) & second.revisions["annotator_id"].str.endswith(f":{ann1}")
    ]
    assert changed[["revision", "current"]].values.tolist() == [[1, False], [2, True]]

    # The token: in no file under the data folder, no log line, no output.
    token = label_studio.token
    for path in study.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    captured = capsys.readouterr()
    for text in (*lines, caplog.text, captured.out, captured.err):
        assert token not in text
    assert any("exported whole" in line and "3 annotation(s)" in line for line in lines)
    print("\n".join(["", pushed_out, *lines]))  # with -s: the push/pull lines and their times


def _assert_current(annotations: pd.DataFrame, team: Team) -> None:
    """Each (task, user)'s imported rating is what that user answered last in Label Studio."""
    by_key = annotations.set_index(["task_id", "annotator_id"])
    assert len(by_key) == len(team.answers)
    for (task_id, user), answers in team.answers.items():
        row = by_key.loc[(task_id, f"{LS_PREFIX}{DEFAULT_INSTANCE}:{user}")]
        for name, value in stored_values(answers).items():
            got = row[name]
            got = list(got) if name == "keypoint_hits" and got is not None else got
            assert got == value, (task_id, user, name, got, value)


def test_a_bad_token_is_refused_naming_the_url_and_variable_never_the_token(
    label_studio: LabelStudioServer, study: Path, config_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "wrong-" + label_studio.token[::-1]
    for command in (push_annotation_projects, pull_annotation_exports):
        with pytest.raises(LabelStudioError) as refused:
            command(str(config_dir), str(study), environ={URL_ENV: label_studio.url, TOKEN_ENV: wrong})
        message = str(refused.value)
        assert label_studio.url in message and TOKEN_ENV in message and "refused the token" in message
        assert wrong not in message and label_studio.token not in message and wrong not in caplog.text
    assert not (study / "annotations" / "inbox").exists()


def test_a_push_adds_what_the_export_gained_and_updates_the_config(
    ls_env: dict[str, str], study: Path, config_dir: Path
) -> None:
    """Idempotent is not 'never again': new tasks and a changed labelling config reach Label Studio."""
    tasks_file = study / EXPORT_DIR / LS_SINGLE_TASKS
    config_file = study / EXPORT_DIR / LS_SINGLE_CONFIG
    full = json.loads(tasks_file.read_text())
    tasks_file.write_text(json.dumps(full[:-2]))
    first = push_annotation_projects(str(config_dir), str(study), study="growth")
    assert (first[0].title, first[0].created, first[0].tasks_added) == (
        "growth · single",
        True,
        len(full) - 2,
    )
    tasks_file.write_text(json.dumps(full))
    config_file.write_text(config_file.read_text().replace("Optional comment", "Comment (optional)"))
    second = push_annotation_projects(str(config_dir), str(study), study="growth")
    assert (second[0].created, second[0].tasks_added, second[0].tasks_present) == (False, 2, len(full) - 2)
    assert second[0].settings_updated == ["label_config"]
    conn = connection_from_env()
    client = connect(conn)
    project = client.projects.get(second[0].project_id)
    assert "Comment (optional)" in project.label_config
    in_ls = [t.data["task_id"] for t in client.tasks.list(project=project.id, page_size=500)]
    assert sorted(in_ls) == sorted(t["data"]["task_id"] for t in full)


def test_each_annotator_meets_the_attention_checks_at_the_designs_rate_as_served(
    label_studio: LabelStudioServer, ls_env: dict[str, str], study: Path, config_dir: Path, sample
) -> None:
    """Issue 36: three annotators asking the real server for their next task (its next-task API,
    what the editor's "Label All Tasks" calls). Label Studio serves whoever is ahead the export's
    order and the others a shuffle of the stretch the first has done (breadth first): with the
    tasks laid out as forms of 10, a check 7th in each, everyone meets one check per 10 tasks."""
    started = time.perf_counter()
    (pushed, _) = push_annotation_projects(str(config_dir), str(study), study="serving")
    kinds = dict(zip(sample["task_id"], sample["kind"], strict=True))
    team = [sign_up(label_studio, f"serve{n}@clcg.invalid") for n in range(3)]
    seen: dict[int, list[str]] = {a.user_id: [] for a in team}
    queues: dict[int, list[str]] = {a.user_id: [] for a in team}

    def take(annotator) -> None:
        task = annotator.next_task(pushed.project_id)
        annotator.submit(task["id"], [_result("adequacy", 3)])
        seen[annotator.user_id].append(str(task["data"]["task_id"]))
        queues[annotator.user_id].append(str(task.get("queue")))

    for _ in range(7):  # working side by side: each takes a task in turn
        for annotator in team:
            take(annotator)
    first, second, third = (seen[a.user_id] for a in team)
    for own in (first, second, third):
        assert own == first  # in step: every one is served the export's order, the check 7th
        assert [kinds[t] for t in own] == ["single"] * 6 + ["attention"]
    assert all("Sequence" in q for q in queues[team[0].user_id])
    assert all("Breadth first" in q for a in team[1:] for q in queues[a.user_id])
    for _ in range(10):  # the first works ahead: the export's order, the next check 7th again
        take(team[0])
    assert [i + 1 for i, t in enumerate(first) if kinds[t] == "attention"] == [7, 17]
    for _ in range(10):  # the second follows: the same ten tasks, shuffled, so the same one check
        take(team[1])
    assert sorted(second[7:]) == sorted(first[7:])
    assert sum(kinds[t] == "attention" for t in second[7:]) == 1
    print(f"\nserved {sum(map(len, seen.values()))} tasks in {time.perf_counter() - started:.1f} s: {seen}")


def test_a_careless_rating_is_excluded_and_its_correction_is_a_revision(
    label_studio: LabelStudioServer, ls_env: dict[str, str], study: Path, config_dir: Path, sample, keypoints
) -> None:
    """Issue 36 with the real server: its checkbox control takes "none" and a fact together; the
    export still imports (the rating excluded, named), and the annotator's fix revises it."""
    config, data = str(config_dir), str(study)
    push_annotation_projects(config, data, study="careless")
    conn = connection_from_env()
    client = connect(conn)
    single = find_project(client, conn, "careless · single")
    team = Team(client, sample, keypoints)
    in_ls = team.task_ids(single.id)
    checked = set(keypoints["item_id"])
    rows = sample[(sample["kind"] == "single") & sample["item_id"].isin(checked)]
    t1, t2 = rows["task_id"].tolist()[:2]
    fact = keypoints.loc[keypoints["item_id"] == rows["item_id"].iloc[0], "keypoint_id"].iloc[0]
    user = client.users.create(email="careless@clcg.invalid", username="careless").id
    answers = control_answers(sample, keypoints, t1, 1)
    careless = client.annotations.create(
        id=in_ls[t1], result=_results({**answers, "keypoints": [fact, "none"]}), completed_by=user
    ).id
    team.rate(in_ls[t2], t2, user, seed=3)
    desk = Desk(study, sample, keypoints)
    pull_annotation_exports(config, data, study="careless", log=lambda _: None, now=DAY_ONE)
    first = desk.run(DAY_ONE).now.iloc[0]  # the single project's export (the pair one has none)
    assert first[["status", "imported", "excluded", "refused"]].tolist() == ["accepted", 1, 1, 0], first[
        "error"
    ]
    assert "ticks 'none' and a fact" in first["error"]
    client.annotations.update(id=careless, result=_results({**answers, "keypoints": [fact]}))
    pull_annotation_exports(config, data, study="careless", log=lambda _: None, now=DAY_TWO)
    second = desk.run(DAY_TWO)
    row = second.now.iloc[0]
    assert row[["status", "skipped", "revised", "excluded"]].tolist() == ["accepted", 1, 1, 0], row["error"]
    assert len(second.annotations) == 2 and second.excluded.empty
