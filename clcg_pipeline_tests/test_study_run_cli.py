"""`clcg run` / `clcg plan` failures a user meets: one clear line, never a traceback."""

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import pytest

from clcg_pipeline.cli import main
from clcg_pipeline.orchestration import StudyRunError, run_study
from clcg_pipeline.orchestration._partition_run import clean_message, failure_of
from clcg_pipeline.orchestration._plan import plan_study
from clcg_pipeline_tests.conftest import assert_interrupted_in_one_line

DEMO = Path(__file__).resolve().parents[1] / "clcg_pipeline" / "corpus" / "demo_data"


def test_run_with_an_unknown_model_names_it_and_the_known_ones(
    demo_config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    code = main(["run", "--config", str(demo_config_dir), "--data", str(tmp_path / "d"), "--models", "nope"])
    err = capsys.readouterr().err
    assert code == 2  # a usage error
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1
    assert "nope" in err and "lexical-reader" in err
    with pytest.raises(StudyRunError, match=r"unknown model\(s\) nope: models.yaml has .*lexical-reader"):
        run_study(config_dir=str(demo_config_dir), data_dir=str(tmp_path / "d"), models=["nope"])
    with pytest.raises(StudyRunError, match=r"unknown language\(s\) xx: languages.yaml has en, pt"):
        run_study(config_dir=str(demo_config_dir), data_dir=str(tmp_path / "d"), languages=["xx"])
    assert not (tmp_path / "d").exists()


def test_plan_with_an_unknown_model_names_it_and_the_known_ones(
    demo_config_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code = main(["plan", "--config", str(demo_config_dir), "--data", str(tmp_path / "d"), "--models", "nope"])
    err = capsys.readouterr().err
    assert code == 2  # a usage error
    assert err.startswith("error:") and "nope" in err and "lexical-reader" in err
    assert "Traceback" not in err and "KeyError" not in err
    with pytest.raises(ValueError, match=r"unknown model\(s\) nope: models.yaml has .*lexical-reader"):
        plan_study(config_dir=str(demo_config_dir), data_dir=str(tmp_path / "d"), models=["nope"])


def test_an_interrupted_run_is_recognised() -> None:
    @dg.op
    def slow() -> None:
        raise KeyboardInterrupt  # what Ctrl-C raises inside a step

    result = dg.GraphDefinition(name="g", node_defs=[slow]).to_job().execute_in_process(raise_on_error=False)
    assert not result.success
    assert failure_of(result)[2] is True


@pytest.mark.parametrize(
    ("message", "cls_name", "shown"),
    [
        (
            "clcg_pipeline.corpus._errors.CorpusError: language 'ka': bad line\n",
            "CorpusError",
            "language 'ka': bad line",
        ),
        (
            "dagster._core.definitions.events.Failure: semsim is not installed\n",
            "Failure",
            "semsim is not installed",
        ),
        ("KeyError: 'x'\n", "KeyError", "KeyError: 'x'"),
    ],
)
def test_root_causes_lose_internal_class_paths(message: str, cls_name: str, shown: str) -> None:
    assert clean_message(SimpleNamespace(message=message, cls_name=cls_name))[0] == shown


@pytest.mark.slow
def test_a_bad_corpus_file_is_named_by_its_language_without_class_paths(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    source = tmp_path / "corpus"
    shutil.copytree(DEMO / "articles", source)
    with (source / "ka.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"broken json\n')
    edit_yaml(
        demo_config_dir / "sources.yaml",
        lambda doc: doc.update(sources=[{"name": "mine", "kind": "jsonl", "path": str(source)}]),
    )
    with pytest.raises(StudyRunError) as failure:
        run_study(config_dir=str(demo_config_dir), data_dir=str(tmp_path / "d"), languages=["en", "ka"])
    message = str(failure.value)
    assert "ka.jsonl" in message and "'ka'" in message
    assert "clcg_pipeline." not in message and "CorpusError" not in message
    assert "[en]" not in message  # the partition that happened to run first is not the culprit


def _log_watchers(group: int) -> list[int]:
    """Dagster's log-capture helpers (``watch_orphans.py``, started by every run) in ``group``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            ours = entry.name.isdigit() and os.getpgid(int(entry.name)) == group
            if ours and b"watch_orphans" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue  # ended meanwhile
    return found


@pytest.mark.slow
def test_ctrl_c_during_a_run_says_one_line(demo_config_dir: Path, tmp_path: Path) -> None:
    """Ctrl-C at a terminal reaches the whole process group: Dagster's helper processes of the
    run in progress printed a KeyboardInterrupt traceback each under the one line (issue 32)."""
    data = tmp_path / "data"
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "clcg_pipeline.cli", "run", "--config", str(demo_config_dir)]
    process = subprocess.Popen(
        [*command, "--data", str(data), "--languages", "en,pt,ka"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        start_new_session=True,  # a group of its own, as a terminal's foreground job
    )
    deadline = time.monotonic() + 240
    # Mid-run: the first corpus partition is stored, more work is queued behind it, and a run
    # is in progress whose log helpers have had a second to settle in their loop.
    seen: dict[int, float] = {}
    while True:
        assert process.poll() is None, process.communicate()
        now = time.monotonic()
        assert now < deadline
        seen = {pid: seen.get(pid, now) for pid in _log_watchers(process.pid)}
        settled = any(now - since >= 1.0 for since in seen.values())
        if settled and (data / "articles" / "language=en" / "data.parquet").exists():
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert_interrupted_in_one_line(process.returncode, out, err)
