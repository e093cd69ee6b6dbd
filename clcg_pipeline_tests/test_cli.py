"""The `clcg` commands as a user would type them (`clcg run` then `clcg query`: test_study_run.py)."""

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.corpus import load_source, sample_articles
from clcg_pipeline_tests.conftest import PROJECT_ROOT, run_clcg

pytestmark = pytest.mark.slow


def _table(data: Path, name: str) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(path) for path in sorted((data / name).rglob("*.parquet"))])


def test_bad_config_is_one_clear_line(config_dir: Path, tmp_path: Path) -> None:
    (config_dir / "study.yaml").write_text("seed: forty-two\n", encoding="utf-8")
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    ran = run_clcg("run", "--config", str(config_dir), "--data", str(tmp_path / "d"), env=env, cwd=tmp_path)
    assert ran.returncode == 1
    assert "study.yaml" in ran.stderr and "seed" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert ran.stdout == ""  # no progress bar before the error
    assert ran.stderr.startswith("error: ") and len(ran.stderr.strip().splitlines()) == 1

    shutil.copyfile(PROJECT_ROOT / "assets_config" / "study.yaml", config_dir / "study.yaml")
    unknown = run_clcg(
        "run",
        "--config",
        str(config_dir),
        "--models",
        "nope",
        "--data",
        str(tmp_path / "d"),
        env=env,
        cwd=tmp_path,
    )
    assert unknown.returncode == 2 and unknown.stdout == ""  # a usage error
    assert unknown.stderr.startswith("error: --models: unknown nope")


def test_a_missing_source_path_is_one_line_before_any_progress(config_dir: Path, tmp_path: Path) -> None:
    # Before, `clcg run` drew "corpus en 0/38" and only then failed on the missing folder.
    missing = tmp_path / "no-such-belebele"
    (config_dir / "sources.yaml").write_text(
        f"sources:\n  - name: bb\n    kind: belebele\n    role: primary\n    path: {missing}\n",
        encoding="utf-8",
    )
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    ran = run_clcg("run", "--config", str(config_dir), "--data", str(tmp_path / "d"), env=env, cwd=tmp_path)
    assert ran.returncode == 1 and ran.stdout == ""
    assert ran.stderr.startswith("error: ") and len(ran.stderr.strip().splitlines()) == 1
    assert "sources.yaml: sources[0] (bb).path" in ran.stderr and str(missing) in ran.stderr


def test_query_without_catalog_explains(tmp_path: Path) -> None:
    ran = run_clcg("query", "--data", str(tmp_path / "empty"), "SELECT 1", env=dict(os.environ), cwd=tmp_path)
    assert ran.returncode == 1
    assert "no catalog yet" in ran.stderr


def test_plan_counts_calls_before_anything_runs(demo_config_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    data = tmp_path / "data"
    planned = run_clcg("plan", "--config", str(demo_config_dir), "--data", str(data), env=env, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    total = next(line for line in planned.stdout.splitlines() if "TOTAL" in line)
    cells = total.split()  # TOTAL, calls, cached, shared, ... (the blank context has no cell)
    config = load_config(demo_config_dir)
    english = load_source(config.sources.primary, config.languages).articles.query("language == 'en'")
    sample = sample_articles(
        english, config.study.sampling, reference="en", repetitions=config.study.repetitions
    )
    reps = dict(zip(sample["doc_id"], sample["n_reps"], strict=True))
    # 11 articles, 2 of them run 3 times = 15 calls per language; ht lacks demo-006; two conditions.
    assert sum(reps.values()) == 15
    assert cells[1] == str((7 * 15 - reps["demo-006"]) * 2)
    # Closed-book prompts carry no passage: the same 15 requests in every language, sent once.
    assert cells[3] == str(7 * 15 - reps["demo-006"] - 15)
    assert not data.exists()  # planning writes nothing and calls nothing


def test_budget_stops_cleanly_with_partial_results(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable
) -> None:
    # Give the offline reader a price so the budget binds: every call then costs about $0.2.
    edit_yaml(
        demo_config_dir / "models.yaml",
        lambda doc: doc["models"][0].update(price_input_per_mtok=100.0, price_output_per_mtok=100.0),
    )
    # Three languages (the reference, the baseline, a target) are far more calls than the budget's
    # dozen: the demo's seven only made the run longer.
    edit_yaml(
        demo_config_dir / "languages.yaml",
        lambda doc: doc.update(
            languages=[lang for lang in doc["languages"] if lang["iso"] in ("en", "pt", "ka")]
        ),
    )
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "COLUMNS": "160"}
    data = tmp_path / "data"
    ran = run_clcg(
        "run", "--config", str(demo_config_dir), "--data", str(data), "--budget", "2.5", env=env, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "budget reached" in ran.stdout
    calls = _table(data, "calls")
    spent = calls.loc[~calls["cached"], "cost_usd"].sum()
    assert 0 < spent <= 2.5
    assert (calls["outcome"] == "skipped_budget").any()
    predictions = _table(data, "predictions")
    assert {"ok", "missing"} <= set(predictions["status"])
    assert (data / "study_results.json").exists()  # the analysis still ran on what was paid for

    # The report can be rendered again from the results alone.
    report = run_clcg(
        "report", "--data", str(data), "--out", str(tmp_path / "again.html"), env=env, cwd=tmp_path
    )
    assert report.returncode == 0, report.stderr
    assert "H1" in (tmp_path / "again.html").read_text(encoding="utf-8")


def _band_scores(config_dir: Path, model: str, languages: dict[str, float], n_docs: int = 12) -> pd.DataFrame:
    """A scores table in the config's primary band; ``languages`` maps iso to a base score."""
    band = load_config(config_dir).study.band
    rows = [
        {
            "model": model,
            "language": iso,
            "doc_id": f"d{doc:02d}",
            "item_id": f"d{doc:02d}-{item}",
            "rep": 1,
            "context_scope": band.context_scope,
            "level": band.levels[item % len(band.levels)],
            "item_source": band.item_source,
            "token_f1": min(1.0, base + 0.03 * ((doc * 7 + item * 3) % 5)),
            "exact_match": 0.0,
            "accuracy": None,
            "rouge_l": base,
            "semsim": None,
            "status": "ok",
        }
        for iso, base in languages.items()
        for doc in range(n_docs)
        for item in range(3)
    ]
    return pd.DataFrame(rows)


def test_estimate_takes_the_data_folder(demo_config_dir: Path, tmp_path: Path, capsys) -> None:
    from clcg_pipeline.cli import main
    from clcg_pipeline.storage import partition_dir, write_frame

    data = tmp_path / "data"
    kept = _band_scores(demo_config_dir, "lexical-reader", {"en": 0.8, "pt": 0.7, "ka": 0.5, "sw": 0.4})
    for (language, model), part in kept.groupby(["language", "model"]):
        write_frame(
            partition_dir(data, "scores", {"language": language, "model": model}) / "data.parquet",
            part,
            contract="scores",
        )
    # A model no longer in models.yaml stays on disk; like the analysis asset, leave it out.
    write_frame(
        partition_dir(data, "scores", {"language": "ka", "model": "retired"}) / "data.parquet",
        _band_scores(demo_config_dir, "retired", {"ka": 0.0}),
        contract="scores",
    )
    single = tmp_path / "scores.parquet"
    kept.to_parquet(single, index=False)
    args = ["estimate", "--config", str(demo_config_dir), "--replicates", "50"]
    assert main([*args, "--scores", str(single), "--out", str(tmp_path / "file.json")]) == 0
    for given in (data, data / "scores", f"file://{data}"):
        out = tmp_path / "folder.json"
        assert main([*args, "--scores", str(given), "--out", str(out)]) == 0, capsys.readouterr().err
        from_folder = json.loads(out.read_text(encoding="utf-8"))
        from_file = json.loads((tmp_path / "file.json").read_text(encoding="utf-8"))
        assert from_folder["h1_micro"] == from_file["h1_micro"]
        assert from_folder["settings"]["scores_path"] == str(given)

    empty = tmp_path / "empty"
    (empty / "articles").mkdir(parents=True)
    assert main([*args, "--scores", str(empty), "--out", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no scores here" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()


def _results_folder(path: Path) -> Path:
    from clcg_pipeline.storage import partition_dir, write_frame, write_json

    write_json(path / "study_results.json", {"h1": {}})
    write_frame(partition_dir(path, "estimates", None) / "data.parquet", pd.DataFrame({"estimand": ["x"]}))
    return path


def test_report_on_a_read_only_folder_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import tempfile

    import clcg_pipeline.report as report
    from clcg_pipeline.cli import main

    data = _results_folder(tmp_path / "data")
    monkeypatch.setattr(report, "render_report", lambda results, estimates: "<html></html>")
    data.chmod(0o555)
    if os.geteuid() == 0:  # root writes anyway; fail the way a read-only folder fails for a user

        def refuse(*args: object, dir: str | None = None, **kwargs: object) -> tuple[int, str]:
            raise PermissionError(13, "Permission denied", f"{dir}/.report-x.html.tmp")

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
    try:
        assert main(["report", "--data", str(data)]) == 1
    finally:
        data.chmod(0o755)
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Permission denied" in err and str(data) in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    # The file the user asked for, not the temporary file beside it.
    assert str(data / "report.html") in err and ".tmp" not in err


def test_report_and_query_take_a_file_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import clcg_pipeline.report as report
    from clcg_pipeline.cli import main
    from clcg_pipeline.storage import build_catalog

    data = _results_folder(tmp_path / "data")
    monkeypatch.setattr(report, "render_report", lambda results, estimates: "<html>ok</html>")
    assert main(["report", "--data", f"file://{data}"]) == 0, capsys.readouterr().err
    assert (data / "report.html").read_text(encoding="utf-8") == "<html>ok</html>"
    capsys.readouterr()
    build_catalog(data)
    assert (
        main(["query", "--data", f"file://{data}", "--format", "csv", "SELECT estimand FROM estimates"]) == 0
    )
    assert capsys.readouterr().out.splitlines() == ["estimand", "x"]


def test_query_table_prints_lists_and_integer_counts(tmp_path: Path, capsys) -> None:
    from clcg_pipeline.cli import main
    from clcg_pipeline.storage import build_catalog, partition_dir, write_frame

    data = tmp_path / "data"
    items = pd.DataFrame(
        {"item_id": ["a", "b[bold]"], "options": [["yes", "no"], None], "rep": [3, 4], "score": [0.5, None]}
    )
    write_frame(partition_dir(data, "items", None) / "data.parquet", items)
    build_catalog(data)
    sql = "SELECT item_id, options, sum(rep) AS reps, any_value(score) AS score FROM items GROUP BY ALL"
    assert main(["query", "--data", str(data), f"{sql} ORDER BY item_id"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("│")]
    cells = [[cell.strip() for cell in line.strip("│").split("│")] for line in lines]
    assert cells == [["a", '["yes", "no"]', "3", "0.5000"], ["b[bold]", "", "4", ""]]


def test_errors_name_the_problem_not_the_class() -> None:
    from clcg_pipeline.cli import error_message

    failure = RuntimeError(
        "corpus_job [ka] failed: clcg_pipeline.corpus._errors.CorpusError: ka.jsonl line 3: field 'question'"
    )
    assert error_message(failure) == "corpus_job [ka] failed: ka.jsonl line 3: field 'question'"
    denied = PermissionError(13, "Permission denied", "/data/report.html")
    assert error_message(denied) == "/data/report.html: Permission denied"


def test_unknown_model_in_plan_is_one_line(config_dir: Path, tmp_path: Path, capsys) -> None:
    from clcg_pipeline.cli import main

    assert main(["plan", "--config", str(config_dir), "--data", str(tmp_path), "--models", "nope"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: --models: unknown nope")


def test_interrupt_inside_a_dagster_run_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from dagster import DagsterExecutionInterruptedError

    import clcg_pipeline.cli as cli

    def interrupted(args: object) -> int:
        raise DagsterExecutionInterruptedError("Execution was interrupted")

    monkeypatch.setattr(cli, "cmd_report", interrupted)
    assert cli.main(["report"]) == 130
    # The wording issue 8 asks for, as the line's start.
    assert capsys.readouterr().err == "interrupted; run again to resume (completed calls are cached)\n"


def test_ctrl_c_outside_a_dagster_run_is_the_same_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import clcg_pipeline.cli as cli

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_report", interrupted)
    assert cli.main(["report"]) == 130
    assert capsys.readouterr().err == "interrupted; run again to resume (completed calls are cached)\n"


def test_warnings_are_one_line_without_our_source(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """A corpus warning (e.g. bytes that are not UTF-8) reads as one ``warning:`` line, not Python's
    default ``/path/clcg_pipeline/corpus/_sources.py:39: CorpusWarning:`` plus a line of our code."""
    import warnings

    import clcg_pipeline.cli as cli
    from clcg_pipeline.corpus import CorpusWarning

    def warns(args: object) -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn(
                "1 field(s) were not valid UTF-8: swh_Latn.jsonl:2: field 'question'",
                CorpusWarning,
                stacklevel=2,
            )
        return 0

    monkeypatch.setattr(cli, "cmd_report", warns)
    assert cli.main(["report"]) == 0
    err = capsys.readouterr().err
    assert err == "warning: 1 field(s) were not valid UTF-8: swh_Latn.jsonl:2: field 'question'\n"


def test_estimate_full_with_too_few_articles_says_so(demo_config_dir: Path, tmp_path: Path, capsys) -> None:
    """Below study.min_articles the interval is withheld: the summary line says why, no traceback."""
    from clcg_pipeline.cli import main

    single = tmp_path / "scores.parquet"
    _band_scores(demo_config_dir, "lexical-reader", {"en": 0.8, "pt": 0.7, "ka": 0.5}, n_docs=3).to_parquet(
        single, index=False
    )
    out = tmp_path / "full.json"
    args = ["estimate", "--config", str(demo_config_dir), "--replicates", "20", "--full"]
    assert main([*args, "--scores", str(single), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "not identifiable" in printed and "too few articles" in printed
    assert json.loads(out.read_text(encoding="utf-8"))["h1"]["h1_micro"]["ci_low"] is None


def _in_a_terminal(*args: str, cwd: Path, columns: int = 80) -> str:
    """``clcg ARGS`` with stdout on a pseudo-terminal ``columns`` wide, as a user sees it (no colour)."""
    import fcntl
    import pty
    import struct
    import termios

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(DAGSTER_HOME=str(cwd / "home"), NO_COLOR="1", TERM="dumb")
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    command = [sys.executable, "-m", "clcg_pipeline.cli", *args]
    with subprocess.Popen(command, stdout=follower, stderr=subprocess.PIPE, env=env, cwd=cwd) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # Linux says EIO once the child has closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        err = proc.stderr.read().decode() if proc.stderr else ""
    os.close(leader)
    assert proc.returncode == 0, err
    text = b"".join(chunks).decode("utf-8").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # any style codes left despite NO_COLOR


LINUX_PTY = pytest.mark.skipif(sys.platform != "linux", reason="needs a Linux pseudo-terminal")
LONG_MODEL = "claude-3-5-sonnet-20241022-offline"


@LINUX_PTY
def test_plan_fits_an_80_column_terminal_with_whole_names(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable
) -> None:
    """Names were cut (``lexical-re…``) and two columns were both headed ``input_tok…``."""

    def add_long_model(doc: dict) -> None:
        doc["models"].append({**doc["models"][0], "id": LONG_MODEL})

    edit_yaml(demo_config_dir / "models.yaml", add_long_model)
    out = _in_a_terminal(
        "plan", "--config", str(demo_config_dir), "--data", str(tmp_path / "d"), cwd=tmp_path
    )
    lines = out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80, out
    assert "…" not in out, out
    from clcg_pipeline.orchestration import plan_granularity

    tasks, _ = plan_granularity(config_dir=str(demo_config_dir), data_dir=str(tmp_path / "d"))
    assert tasks is not None
    names = {*tasks["model"], *tasks["task"], *tasks["context"], *tasks["tokenizer"]} - {"TOTAL", ""}
    words = set(re.findall(r"[\w.-]+", out))  # a title says "(tokens counted with cl100k_base)"
    assert LONG_MODEL in {*tasks["model"]} and names <= words, names - words
    # The two input-token columns have different headers (total, and per call sent).
    header = next(line for line in lines if line.split()[:2] == ["task", "context"])
    above = lines[lines.index(header) - 1]
    assert "input" in above and "in tok" in above and "per call" in header and "tokens" in header


def _leading_comment(path: Path) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    comment = [
        line[2:] for line in lines[: next(i for i, line in enumerate(lines) if not line.startswith("--"))]
    ]
    return " ".join(" ".join(comment).split())


@LINUX_PTY
def test_query_list_shows_whole_descriptions_at_80_columns(tmp_path: Path) -> None:
    """Only each query's first comment line was shown, so descriptions stopped mid-sentence."""
    from clcg_pipeline.storage import named_queries

    out = _in_a_terminal("query", "--list", cwd=tmp_path)
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80, out
    flowing = " ".join(out.split())  # the wrapped lines read as one text
    queries = named_queries()
    assert len(queries) >= 4
    for name, path in queries.items():
        assert f"{name} {_leading_comment(path)}" in flowing, name


def test_each_cli_module_is_under_600_lines() -> None:
    """The CLI was one 618-line file; each of its modules holds one concern and stays under 600."""
    import clcg_pipeline.cli as cli

    where = Path(cli.__file__)
    files = sorted(where.parent.glob("*.py")) if where.name == "__init__.py" else [where]
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in files}
    assert len(sizes) > 1 and max(sizes.values()) < 600, sizes
