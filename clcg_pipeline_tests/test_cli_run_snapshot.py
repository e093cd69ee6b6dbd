"""`clcg run`'s fast path (the complete-run snapshot) sees what the records' verdict reads.

The snapshot is a memo of the records' verdict (``storage/_snapshot.py``): the analysis is
current only while the annotation inbox holds what ``annotation_imports`` recorded, so a file
added to an inbox the config puts outside the data folder must send the run to the full check.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from clcg_pipeline.config import code_versions, load_config
from clcg_pipeline.storage import complete_run_request, write_complete_run, write_json
from clcg_pipeline_tests.report.test_report import _full

# What the no-op rerun must not load: rendering the HTML report (results, granularity, Dagster)
# took ~1.5 s of a 2.4 s "everything is up to date" before ``report`` loaded it lazily.
HEAVY = (
    "dagster",
    "scipy",
    "statsmodels",
    "clcg_pipeline.report._render",
    "clcg_pipeline.results",
    "clcg_pipeline.granularity",
    "clcg_pipeline.orchestration",
)


def test_a_new_file_in_an_inbox_outside_the_data_folder_is_not_up_to_date(
    config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clcg_pipeline.cli as cli
    import clcg_pipeline.cli._run as run

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    inbox = tmp_path / "shared-inbox"
    inbox.mkdir()
    (inbox / "batch-1.csv").write_text("imported")
    edit_yaml(config_dir / "study.yaml", lambda doc: doc["human_validation"].update(inbox=str(inbox)))
    data = tmp_path / "data"
    data.mkdir()
    _memo_of_a_complete_run(config_dir, data)  # what run_study writes after the full check
    full_checks: list[object] = []
    monkeypatch.setattr(run, "_run_with_progress", lambda *args: full_checks.append(args))
    for quiet in ("_say_coordination", "_print_run_summary", "_print_study_results"):
        monkeypatch.setattr(run, quiet, lambda *args: None)
    argv = ["run", "--config", str(config_dir), "--data", str(data)]

    assert cli.main(argv) == 0
    assert full_checks == []  # nothing changed: the memo holds
    (inbox / "batch-2.csv").write_text("a new annotation file")
    assert cli.main(argv) == 0
    assert len(full_checks) == 1  # the records decide: the analysis will import it


def test_a_no_op_rerun_on_an_object_store_takes_the_fast_path_until_an_object_changes(
    config_dir: Path, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On ``s3://`` the memo is written and read as on disk (one listing, no Dagster): before it
    was, every no-op rerun there ran the full check (~40 s on a local S3 server)."""
    import s3fs
    from upath import UPath

    import clcg_pipeline.cli as cli
    import clcg_pipeline.cli._run as run

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    data = f"s3://{bucket}/clcg"
    write_json(UPath(data) / "study_results.json", _full())
    _memo_of_a_complete_run(config_dir, data)
    full_checks: list[object] = []
    monkeypatch.setattr(run, "_run_with_progress", lambda *args: full_checks.append(args))
    for quiet in ("_say_coordination", "_print_run_summary", "_print_study_results"):
        monkeypatch.setattr(run, quiet, lambda *args: None)
    opened: list[str] = []
    monkeypatch.setattr(run, "_refresh_copied_catalog", opened.append)
    argv = ["run", "--config", str(config_dir), "--data", data]

    assert cli.main(argv) == 0
    assert full_checks == [] and opened == []  # nothing changed: the memo holds, no catalog download
    s3fs.S3FileSystem(skip_instance_cache=True).pipe(f"{data}/scores/language=en/data.parquet", b"new")
    assert cli.main(argv) == 0
    assert len(full_checks) == 1  # an object written since (here by another process): the records decide
    assert opened == [data]


def _memo_of_a_complete_run(config_dir: Path, data: Path | str) -> None:
    """The data folder's complete-run memo as a finished study of ``config_dir`` leaves it."""
    config = load_config(config_dir)
    asked = complete_run_request(
        config_dir=str(config_dir),
        versions=code_versions(config),
        models=None,
        languages=None,
        mode="online",
        budget_usd=None,
        inbox=config.study.human_validation.inbox,
    )
    write_complete_run(str(data), asked, 5)


def _as_a_complete_run_left_it(config_dir: Path, data: Path) -> None:
    """The data folder's memo and results document as a finished study leaves them."""
    write_json(data / "study_results.json", _full())
    _memo_of_a_complete_run(config_dir, data)


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*")}


def test_a_no_op_rerun_loads_no_dagster_analysis_or_report_renderer_and_rewrites_nothing(
    config_dir: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _as_a_complete_run_left_it(config_dir, data)
    before = _files(data)
    code = (
        "import sys; from clcg_pipeline.cli import main;"
        "rc = main(['run', '--config', sys.argv[1], '--data', sys.argv[2]]);"
        f"print('loaded:', sorted(m for m in {HEAVY!r} if m in sys.modules), rc)"
    )
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(config_dir), str(data)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "everything is up to date (5 partitions)" in done.stdout
    assert f"results: {data / 'study_results.json'}" in done.stdout  # the H1 table was printed
    assert done.stdout.splitlines()[-1] == "loaded: [] 0"
    assert _files(data) == before


def test_a_rerun_in_a_copied_folder_rebuilds_its_catalog_and_misses_the_memo(
    config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copied folder keeps the original's memo and may keep a catalog that reads the original
    (an ``s3://`` folder copied to disk, or one built before the catalog recorded its folder):
    the memo names its folder, so the copy misses it, and its catalog is rebuilt before the full
    check (which writes the copy's own memo); nothing else is rewritten. A hit vouches for the
    catalog: it is not opened (on ``s3://``, a download)."""
    import shutil

    import duckdb

    import clcg_pipeline.cli._run as cli_run
    from clcg_pipeline.cli import main
    from clcg_pipeline.storage import build_catalog, default_catalog_path

    original = tmp_path / "original"
    original.mkdir()
    write_json(original / "study_results.json", _full())
    build_catalog(str(original))
    _memo_of_a_complete_run(config_dir, original)
    data = tmp_path / "data"
    shutil.copytree(original, data)  # times kept: only the folder's name tells the copy apart
    catalog = Path(default_catalog_path(str(data)))
    with duckdb.connect(str(catalog)) as con:  # as a catalog that records no folder
        con.execute("DROP TABLE catalog_built_for")
    before = {name: stamp for name, stamp in _files(data).items() if name != catalog.name}
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "200")
    full_checks: list[object] = []
    monkeypatch.setattr(cli_run, "_run_with_progress", lambda *args: full_checks.append(args))
    for quiet in ("_say_coordination", "_start_ledger", "_print_run_summary"):
        monkeypatch.setattr(cli_run, quiet, lambda *args: None)
    argv = ["run", "--config", str(config_dir), "--data", str(data)]
    assert main(argv) == 0
    assert capsys.readouterr().out.count("catalog rebuilt for this folder") == 1
    assert len(full_checks) == 1  # the original's memo does not hold here
    with duckdb.connect(str(catalog), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM catalog_built_for").fetchone() == (1,)
    assert {name: stamp for name, stamp in _files(data).items() if name != catalog.name} == before
    rebuilt = catalog.stat().st_mtime_ns
    assert main(argv) == 0
    assert "catalog rebuilt" not in capsys.readouterr().out  # once: now it fits
    assert catalog.stat().st_mtime_ns == rebuilt
    opened: list[str] = []
    monkeypatch.setattr(cli_run, "_refresh_copied_catalog", opened.append)
    assert main(["run", "--config", str(config_dir), "--data", str(original)]) == 0
    assert "everything is up to date (5 partitions)" in capsys.readouterr().out
    assert opened == []  # the memo holds in its own folder: the catalog is not opened
