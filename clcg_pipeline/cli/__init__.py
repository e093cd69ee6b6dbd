"""The ``clcg`` command: run, plan, compare, annotations, release, reconstruct, query, estimate, report.

Heavy imports (Dagster, SDKs, statsmodels) happen inside each subcommand so that, for
example, ``clcg estimate`` starts in a fraction of a second. ``clcg run`` lives in ``_run``,
the tables in ``_tables``, what the subcommands share in ``_common``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, overload

from clcg_pipeline.cli._annotations import add_annotation_parsers
from clcg_pipeline.cli._common import (
    UsageError,
    auxiliary_ids,
    check_selection,
    console,
    csv,
    dirs,
    error_line,
    say,
    say_error,
)
from clcg_pipeline.cli._compare import (
    add_compare_parser,
    add_power_options,
    cmd_compare,
    cmd_plan_power,
    power_models,
)
from clcg_pipeline.cli._release import add_release_parsers
from clcg_pipeline.cli._run import UP_TO_DATE, check_data_folder, cmd_run
from clcg_pipeline.cli._tables import frame_table, plan_tables, query_list_table

__all__ = [
    "INTERRUPTED",
    "UP_TO_DATE",
    "UsageError",
    "build_parser",
    "check_data_folder",
    "cmd_compare",
    "cmd_estimate",
    "cmd_plan",
    "cmd_query",
    "cmd_report",
    "cmd_run",
    "error_line",
    "error_message",
    "main",
]


# RST/Markdown backticks (``clcg``, `clcg run`) in docstrings and help strings; --help shows plain text.
_BACKTICKS = re.compile(r"`+([^`]*)`+")


class _PlainFormatter(argparse.HelpFormatter):
    """argparse's help with the backticks of our docstrings and help strings taken out."""

    def _format_text(self, text: str) -> str:
        return super()._format_text(_BACKTICKS.sub(r"\1", text))

    def _expand_help(self, action: argparse.Action) -> str:
        return _BACKTICKS.sub(r"\1", super()._expand_help(action))


class _Parser(argparse.ArgumentParser):
    """argparse's errors as the one ``error:`` line of every other error (its default adds the
    whole usage above it, and the prefix ``clcg run: error:``); subcommand parsers are made of
    this class too, so every subcommand's help is plain."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _PlainFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, error_line(f"{message} (see {self.prog} --help)") + "\n")


def _version() -> str:
    """The installed package's version, from its metadata (the one pyproject.toml gives)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("clcg-pipeline")
    except PackageNotFoundError:  # imported from a checkout that was never installed
        return "unknown (not installed)"


def _at_least(kind: type[int] | type[float], least: int, what: str) -> Callable[[str], int | float]:
    """An argparse ``type=``: a finite ``kind`` of at least ``least``, else a usage error."""

    def parse(text: str) -> int | float:
        value: int | float
        try:
            value = kind(text)
        except ValueError:
            value = math.nan  # fails the check below, with the same message
        if not (math.isfinite(value) and value >= least):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


POSITIVE_INT = _at_least(int, 1, "a whole number of 1 or more")
POSITIVE_FLOAT = _at_least(float, 0, "a number above 0")


def _fraction(text: str) -> float:
    value = _at_least(float, 0, "a number between 0 and 1")(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return float(value)


NON_NEGATIVE_INT = _at_least(int, 0, "a whole number of 0 or more")
NON_NEGATIVE_FLOAT = _at_least(float, 0, "a number of 0 or more")


def cmd_plan(args: argparse.Namespace) -> int:
    from rich.text import Text

    if args.power:
        _check_power_models(args)
        return cmd_plan_power(args)

    from clcg_pipeline.config import load_config
    from clcg_pipeline.orchestration import plan_granularity, plan_spent, plan_study

    config_dir, data_dir = dirs(args)
    config = load_config(config_dir)
    check_selection(
        "--models", csv(args.models), [m.id for m in config.models.evaluated], auxiliary_ids(config.models)
    )
    plan = plan_study(config_dir=config_dir, data_dir=data_dir, models=csv(args.models))
    console.print(plan_tables(plan, "Planned calls (nothing has been called)"))
    # Granularity tasks (long documents): their own table, per task, since their prompts dominate cost.
    tasks, notes = plan_granularity(config_dir=config_dir, data_dir=data_dir, models=csv(args.models))
    if tasks is not None:
        console.print(plan_tables(tasks, "Planned granularity task calls (nothing has been called)"))
    for note in notes:
        console.print(Text(f"note: {note}"))
    # The actual beside the estimate: what the calls tables record as paid (the call_spend view).
    spent = plan_spent(data_dir=data_dir, models=csv(args.models))
    if len(spent):
        console.print(Text("Already paid (clcg query --named call_costs has the detail)", style="bold"))
        console.print(frame_table(spent))
    return 0


def _check_power_models(args: argparse.Namespace) -> None:
    """``--compare-models`` not of the A,B form, or an unknown id in it: a usage error, as in ``--models``."""
    from clcg_pipeline.config import load_config

    pair = power_models(args.compare_models)  # the form first: one id is not an unknown one
    models = list(pair) if pair else None
    if models:
        config_dir, _ = dirs(args)
        models_config = load_config(config_dir).models
        check_selection(
            "--compare-models", models, [m.id for m in models_config.evaluated], auxiliary_ids(models_config)
        )


def cmd_query(args: argparse.Namespace) -> int:
    from clcg_pipeline.config import load_config
    from clcg_pipeline.storage import default_catalog_path, named_queries, query, run_named_query

    config_dir, data_dir = dirs(args)
    catalog = args.catalog or default_catalog_path(data_dir)
    # With --catalog alone, its views read the tables beside it.
    tables_dir = data_dir if (args.data or not args.catalog) else None
    if args.list:
        console.print(query_list_table(named_queries()))
        return 0
    if args.named:
        known = named_queries()
        if args.named not in known:
            # An unknown name is a usage error (exit 2), said before the catalog is opened.
            names = ", ".join(known) or "none"
            raise UsageError(f"--named: no named query {args.named!r}; available: {names}")
        band = load_config(config_dir).study.band
        params = {
            "context_scope": band.context_scope,
            "item_source": band.item_source,
            "levels": list(band.levels),
        }
        frame = run_named_query(catalog, args.named, params, data_dir=tables_dir)
    elif args.sql:
        frame = query(catalog, args.sql, data_dir=tables_dir)
    else:
        raise UsageError("give a SQL string, --named NAME or --list")
    if args.format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    elif args.format == "json":
        sys.stdout.write(frame.to_json(orient="records", date_format="iso") + "\n")
    else:
        console.print(frame_table(frame))
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    from upath import UPath

    from clcg_pipeline.analysis import estimate_file
    from clcg_pipeline.config import load_config
    from clcg_pipeline.storage import is_local, write_bytes_atomic

    config_dir, _ = dirs(args)
    config = load_config(config_dir)
    with tempfile.TemporaryDirectory(prefix="clcg-estimate-") as scratch:
        work = Path(scratch)
        scores = UPath(args.scores)
        extra: dict[str, str | None] = {
            "articles_path": _local_file(args.articles, work / "articles.parquet"),
            "fertility_path": _local_file(args.fertility, work / "fertility.parquet"),
            "replication_path": _local_file(args.replication, work / "replication.parquet"),
        }
        out = UPath(args.out)
        local_out = str(Path(out.path)) if is_local(out) else str(work / "out.json")
        if scores.is_dir() and args.full:
            # The study's own document, every section, from the folder (results.derive_study_results).
            result = _derived_from_folder(scores, config, args, extra)
        else:
            scores_file: Path | str
            if scores.is_dir():
                scores_file = _data_folder_scores(scores, config, work)
            else:
                scores_file = _local_file(args.scores, work / "scores.parquet")
            result = estimate_file(
                str(scores_file),
                local_out,
                config,
                replicates=args.replicates,
                seed=args.seed,
                full=args.full,
                articles_path=extra["articles_path"],
                fertility_path=extra["fertility_path"],
                replication_path=extra["replication_path"],
            )
            # Name what the user gave, not the temporary copy the estimators read.
            if isinstance(result.get("settings"), dict) and "scores_path" in result["settings"]:
                result["settings"]["scores_path"] = str(args.scores)
        payload = json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        write_bytes_atomic(out if not is_local(out) else Path(local_out), payload.encode("utf-8"))
    h1 = result.get("h1", result)
    micro = h1["h1_micro"]
    if micro and micro.get("estimate") is not None and micro.get("ci_low") is not None:
        console.print(
            f"H1 micro {micro['estimate']:.4f} [{micro['ci_low']:.4f}, {micro['ci_high']:.4f}] -> {args.out}"
        )
    elif micro and micro.get("estimate") is not None:
        # --full withholds the interval below study.min_articles; say why instead of failing.
        console.print(
            f"H1 micro {micro['estimate']:.4f} not identifiable ({micro.get('reason')}) -> {args.out}"
        )
    else:
        console.print(f"H1 micro not identifiable -> {args.out}")
    return 0


@overload
def _local_file(location: str, copy: Path) -> str: ...
@overload
def _local_file(location: str | None, copy: Path) -> str | None: ...
def _local_file(location: str | None, copy: Path) -> str | None:
    """A local path for a Parquet file given as a path or URL (remote files are copied to ``copy``)."""
    from upath import UPath

    from clcg_pipeline.storage import is_local

    if location is None:
        return None
    source = UPath(location)
    if source.is_dir():
        raise ValueError(f"{location}: is a folder; give a Parquet file (only --scores takes a data folder)")
    if not source.exists():
        raise FileNotFoundError(f"{location}: file not found")
    if is_local(source):
        return str(Path(source.path))
    copy.write_bytes(source.read_bytes())
    return str(copy)


def _data_root(folder: Any) -> Any:
    """The data folder itself, given as itself or as its scores/ subfolder."""
    from clcg_pipeline.storage import stored_tables

    return folder.parent if folder.name == "scores" and "scores" not in stored_tables(folder) else folder


def _derived_from_folder(
    folder: Any, config: Any, args: argparse.Namespace, extra: dict[str, str | None]
) -> dict[str, Any]:
    """study_results.json re-derived from a data folder, as the ``analysis`` asset writes it (run
    metadata aside): the panel's reasons, the versions left out, the drill-down and the studies.

    ``--replicates``/``--seed``/``--replication`` stand in for study.yaml's settings, for every
    section; ``--articles``/``--fertility`` for the folder's tables of the same name."""
    from clcg_pipeline.results import as_written, derive_study_results, sections_from_documents

    study = {
        "bootstrap_replicates": args.replicates,
        "seed": args.seed,
        "replication_scores": extra["replication_path"],
    }
    changed = {key: value for key, value in study.items() if value is not None}
    if changed:
        config = config.model_copy(update={"study": config.study.model_copy(update=changed)})
    given = {"articles": ("doc_id", "published"), "fertility": ("language", "fertility")}
    tables = {
        name: _parquet_columns(extra[f"{name}_path"], columns, f"--{name}")
        for name, columns in given.items()
        if extra[f"{name}_path"]
    }
    root = _data_root(folder)
    for key, reason in sections_from_documents(str(root)).items():
        say(f"note: {key}: taken from the released document: {reason}")
    derived = derive_study_results(str(root), config, **tables)
    return dict(as_written(derived.results))


def _parquet_columns(path: Any, columns: Sequence[str], option: str) -> Any:
    """``columns`` of a Parquet file, or an error naming the option, the file and what is missing."""
    import pyarrow.parquet as pq

    missing = [c for c in columns if c not in pq.read_schema(path).names]
    if missing:
        raise ValueError(f"{option} {path}: missing required column(s) {', '.join(missing)}")
    return pq.read_table(path, columns=list(columns)).to_pandas()


def _data_folder_scores(folder: Any, config: Any, work: Path) -> Path:
    """Every scores partition of a data folder, filtered as the ``analysis`` asset does (for the
    H1 family without ``--full``; with it, the folder's whole document is re-derived).

    Partitions of models or languages not in the config are left out, and so are the article x
    language versions the corpus audit marks incomplete.
    """
    from clcg_pipeline.results import drop_incomplete_versions
    from clcg_pipeline.storage import read_all_partitions

    root = _data_root(folder)
    scores = read_all_partitions(root, "scores")
    if scores.empty:
        raise ValueError(
            f"{folder}: no scores here; give a scores Parquet file or a data folder written by "
            "`clcg run` (with scores/language=*/model=*/data.parquet)"
        )
    scores = scores[
        scores["model"].isin([model.id for model in config.models.evaluated])
        & scores["language"].isin(config.languages.isos)
    ].reset_index(drop=True)
    scores, excluded = drop_incomplete_versions(scores, read_all_partitions(root, "corpus_audit"))
    if scores.empty:
        raise ValueError(f"{folder}: no scores for the models and languages of the config")
    if len(excluded):
        say(f"note: {len(excluded)} article x language version(s) below the completeness threshold left out")
    path = work / "scores.parquet"
    scores.to_parquet(path, index=False)
    return path


def cmd_report(args: argparse.Namespace) -> int:
    from upath import UPath

    from clcg_pipeline.report import render_report, write_report
    from clcg_pipeline.storage import partition_dir, read_frame, read_json, validate_document

    _, data_dir = dirs(args)
    results_path = UPath(data_dir) / "study_results.json"
    if not results_path.exists():
        say_error(f"{results_path}: not found - run `clcg run` first")
        return 1
    estimates_path = partition_dir(data_dir, "estimates", None) / "data.parquet"
    if not estimates_path.exists():
        say_error(f"{estimates_path}: not found - run `clcg run` first")
        return 1
    estimates = read_frame(estimates_path)
    out = UPath(args.out) if args.out else UPath(data_dir) / "report.html"
    results = read_json(results_path)
    validate_document(results, source=str(results_path))  # a bad document: one line naming the field
    write_report(render_report(results, estimates), str(out))
    console.print(f"report: {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="clcg", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--config", type=Path, help="config folder (default $CLCG_CONFIG_DIR or ./assets_config)"
        )
        p.add_argument("--data", help="data folder or URL (default $CLCG_DATA_DIR or ./clcg_data)")

    run = sub.add_parser("run", help="materialize the whole study through Dagster, then print the H1 table")
    common(run)
    run.add_argument("--models", help="comma-separated model ids (default: all in models.yaml)")
    run.add_argument("--languages", help="comma-separated ISO codes (default: the whole panel)")
    run.add_argument("--budget", type=NON_NEGATIVE_FLOAT, help="stop before new spend exceeds this many USD")
    run.add_argument(
        "--mode", choices=["online", "batch"], default="online", help="provider batch APIs for backfills"
    )
    run.add_argument("--force", action="store_true", help="re-run partitions that are up to date")
    run.add_argument(
        "--parallel",
        type=POSITIVE_INT,
        default=None,
        help="responses runs at once (one per model over its languages), in worker processes "
        "(default 2; 1 = one after another)",
    )
    run.add_argument(
        "--no-calls-ahead",
        action="store_true",
        help="make each partition's calls inside its own Dagster run, as UI backfills do, instead of "
        "sending every hosted model's calls first in one stream (the default; see docs/DEPLOY.md)",
    )
    run.add_argument(
        "--regenerate-items",
        action="store_true",
        help="write the item bank (with the generator) and the granularity task bank again",
    )
    run.set_defaults(func=cmd_run)

    plan = sub.add_parser("plan", help="calls, tokens and cost a run would need; calls nothing")
    common(plan)
    plan.add_argument("--models", help="comma-separated model ids")
    add_power_options(plan, _fraction, POSITIVE_FLOAT)
    plan.set_defaults(func=cmd_plan)
    add_compare_parser(sub, common)
    add_annotation_parsers(sub)
    add_release_parsers(sub)

    q = sub.add_parser("query", help="read-only SQL over the DuckDB catalog")
    common(q)
    q.add_argument("sql", nargs="?", help="a SQL query")
    q.add_argument("--named", help="run a query of sql/queries/ with the band's parameters bound")
    q.add_argument("--list", action="store_true", help="list the named queries")
    q.add_argument("--catalog", help="catalog file (default <data>/clcg.duckdb)")
    q.add_argument("--format", choices=["table", "csv", "json"], default="table")
    q.set_defaults(func=cmd_query)

    est = sub.add_parser("estimate", help="run the estimators on any scores Parquet file")
    est.add_argument("--config", type=Path, help="config folder (language roles, band, seed)")
    est.add_argument("--data", help=argparse.SUPPRESS)
    est.add_argument(
        "--scores",
        required=True,
        help="Parquet file with the scores columns, or a data folder written by `clcg run` (path or URL)",
    )
    est.add_argument("--out", required=True, help="JSON file to write (path or URL)")
    est.add_argument("--replicates", type=POSITIVE_INT, help="bootstrap replicates (default: study.yaml)")
    est.add_argument("--seed", type=NON_NEGATIVE_INT, help="bootstrap seed (default: study.yaml)")
    est.add_argument("--full", action="store_true", help="the whole suite (study_results.json), not only H1")
    est.add_argument("--articles", help="Parquet with doc_id, published (for H2 with --full)")
    est.add_argument("--fertility", help="Parquet with language, fertility (with --full)")
    est.add_argument("--replication", help="scores Parquet of a run on another corpus (with --full)")
    est.set_defaults(func=cmd_estimate)

    rep = sub.add_parser("report", help="render the HTML report from study_results.json")
    common(rep)
    rep.add_argument("--out", help="HTML file to write (default <data>/report.html)")
    rep.set_defaults(func=cmd_report)
    return parser


# ``pkg.module.SomeError: `` prefixes (from Dagster failures or chained errors) say nothing to a
# user; the message after them does.
_CLASS_PATH = re.compile(r"\b(?:[A-Za-z_]\w*\.)+[A-Z]\w*(?:Error|Exception|Interrupt)\b:?\s*")


def error_message(exc: BaseException) -> str:
    """One line naming what is wrong, without internal class paths."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    else:
        text = str(exc) or type(exc).__name__
    text = _CLASS_PATH.sub("", text)
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


INTERRUPTED = "interrupted; run again to resume (completed calls are cached)"


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """A warning as one ``warning:`` line: Python's default names our source file and code line."""
    text = _CLASS_PATH.sub("", str(message))
    say("warning: " + " ".join(part.strip() for part in text.splitlines() if part.strip()))


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    args = build_parser().parse_args(argv)
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        say(INTERRUPTED)
        return 130
    except BaseException as exc:
        # Dagster turns Ctrl-C inside a run into its own BaseException; it means the same.
        if type(exc).__name__ == "DagsterExecutionInterruptedError":
            say(INTERRUPTED)
            return 130
        if not isinstance(exc, Exception):
            raise
        return _fail(exc, args)
    finally:
        warnings.showwarning = previous


def _fail(exc: Exception, args: argparse.Namespace) -> int:
    """One clear line instead of a traceback for expected failures; anything else is a bug."""
    from clcg_pipeline.config import ConfigError

    expected = (ConfigError, OSError, ValueError, RuntimeError)
    if isinstance(exc, expected) and not getattr(args, "debug", False):
        say_error(error_message(exc))
        return 2 if isinstance(exc, UsageError) else 1
    raise exc
