"""File edges of the analysis stage: read a scores Parquet file, write results JSON atomically.

Kept light (numpy, pandas, pyarrow and storage's file helpers only) because ``clcg estimate``
counts process start in its time budget; the full suite imports scipy/statsmodels lazily.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from upath import UPath

from clcg_pipeline.analysis._h1 import estimate_h1
from clcg_pipeline.analysis._pair_store import PairStore, store_from_table
from clcg_pipeline.analysis._prepare import KEY_COLUMNS
from clcg_pipeline.analysis._timing import small_pages
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.storage import (
    is_local,
    jsonable,
    read_frame,
    write_bytes_atomic,
    write_frame,
)

_STRING_COLS = ("model", "language", "doc_id", "item_id", "context_scope", "level", "item_source", "status")
_METRICS = ("token_f1", "exact_match", "accuracy", "rouge_l", "semsim")


def read_scores(
    path: str, *, metrics: tuple[str, ...] = _METRICS, filters: dict[str, list[str]] | None = None
) -> pd.DataFrame:
    """Read the needed columns of a scores Parquet file (strings as categoricals).

    Raises ``ValueError`` naming the file and every missing required column. ``filters``
    keeps only rows whose column value is in the given list (applied in Arrow, before pandas).
    """
    schema = pq.read_schema(path)
    required = [*KEY_COLUMNS, *metrics[:1]]
    missing = [c for c in required if c not in schema.names]
    if missing:
        raise ValueError(f"{path}: missing required column(s) {missing}")
    wanted = [*KEY_COLUMNS, *[m for m in metrics if m in schema.names]]
    # Every scored row's columns allocated at once: on small pages (see small_pages, issue 37).
    with small_pages():
        frame = _read_columns(path, wanted, [c for c in _STRING_COLS if c in wanted], filters or {})
    _check_rows(frame, path, metrics[0])
    return frame


def _read_columns(
    path: str, columns: list[str], dictionary: list[str], filters: dict[str, list[str]]
) -> pd.DataFrame:
    """The ``columns`` of a Parquet file as a frame, read and converted one column at a time.

    The Arrow data of one column at most is held beside the frame (a whole-table read held
    every column's decode buffers and its pandas copy at once: twice the frame at a hundred
    models, the suite's peak memory, issue 37); the rows, their order, the categories and
    their order are those of ``pq.read_table(...).to_pandas()``. ``filters`` keeps only rows
    whose column value is in the given list, decided in Arrow before any column is converted.
    """
    source = pq.ParquetFile(path, read_dictionary=dictionary, pre_buffer=False)
    keep = _filter_mask(source, filters)
    out: dict[str, pd.Series] = {}
    for name in columns:
        if _no_value(source, name):
            out[name] = _nan_column(name, source.metadata.num_rows if keep is None else _kept(keep))
            continue
        table = source.read(columns=[name])
        if keep is not None:
            table = table.filter(keep)
        out[name] = table.to_pandas(split_blocks=True, self_destruct=True)[name]
        del table
        # Arrow's allocator keeps freed decode buffers: hand them back before the next column.
        pa.default_memory_pool().release_unused()
    return pd.DataFrame(out, copy=False)


def _no_value(source: pq.ParquetFile, name: str) -> bool:
    """Whether the file's statistics say the float64 column ``name`` holds no value at all.

    A score column of a study run without it (``semsim`` with study.semsim off) is all null:
    nothing in it needs decoding (issue 37). Without a null count in every row group's
    statistics the column is read as usual.
    """
    schema = source.schema_arrow
    if name not in schema.names or schema.field(name).type != pa.float64():
        return False
    meta = source.metadata
    leaves = [meta.schema.column(i).path for i in range(meta.num_columns)]
    if name not in leaves or meta.num_row_groups == 0:
        return False
    leaf = leaves.index(name)
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        stats = group.column(leaf).statistics
        if stats is None or not stats.has_null_count or stats.null_count != group.num_rows:
            return False
    return True


def _nan_column(name: str, rows: int) -> pd.Series:
    """``rows`` missing float64 values held as one (a read-only view): what ``to_pandas`` gives
    for an all-null double column, without eight bytes per scored row (issue 37: 0.6 GB at
    500 models). The suite never writes into the rows it reads."""
    return pd.Series(np.broadcast_to(np.float64(np.nan), (rows,)), name=name, copy=False)


def _kept(keep: pa.ChunkedArray) -> int:
    """Rows a ``filter(keep)`` keeps (a null in the mask drops its row, as ``filter`` does)."""
    return int(pc.sum(keep).as_py() or 0)


def _filter_mask(source: pq.ParquetFile, filters: dict[str, list[str]]) -> pa.ChunkedArray | None:
    """The rows whose value of every filtered column is in its list (None: no filter)."""
    keep = None
    for col, allowed in filters.items():
        column = source.read(columns=[col]).column(0)
        if hasattr(column.type, "value_type"):
            column = column.cast(column.type.value_type)
        inside = pc.is_in(column, value_set=_array(allowed))
        keep = inside if keep is None else pc.and_(keep, inside)
    return keep


_STATUSES = ("ok", "unparseable", "missing")
_RECORD = ("model", "language", "doc_id", "item_id", "rep")


def _record(frame: pd.DataFrame, position: int) -> str:
    row = frame.iloc[position]
    return ", ".join(f"{col}={row[col]}" for col in _RECORD)


def _check_rows(frame: pd.DataFrame, path: str, metric: str) -> None:
    """Reject values the estimators would otherwise silently absorb, naming record and field.

    A status outside the contract would count as a failure under rule A; an ``ok`` row with
    no score would be dropped under both rules. Either usually means a broken scorer.
    """
    if frame.empty:
        return
    # isin on the column itself (its categories, for Arrow dictionaries): no string per row.
    bad_status = ~frame["status"].isin(_STATUSES).to_numpy()
    if bad_status.any():
        first = int(bad_status.argmax())
        raise ValueError(
            f"{path}: record {_record(frame, first)}: field 'status' is {frame['status'].iloc[first]!r}, "
            f"not one of {list(_STATUSES)} ({int(bad_status.sum())} such rows)"
        )
    values = frame[metric].to_numpy(dtype=np.float64, na_value=np.nan)
    by_accuracy = metric != "accuracy" and "accuracy" in frame.columns
    if by_accuracy:
        is_l0 = (frame["level"] == "L0").to_numpy()
        values = np.where(is_l0, frame["accuracy"].to_numpy(dtype=np.float64, na_value=np.nan), values)
    unscored = (frame["status"] == "ok").to_numpy() & ~np.isfinite(values)
    if unscored.any():
        first = int(unscored.argmax())
        # The field named only for the reported row: no per-row array of field names.
        field = "accuracy" if by_accuracy and is_l0[first] else metric
        raise ValueError(
            f"{path}: record {_record(frame, first)}: field {field!r} is missing or not a number "
            f"on a row with status 'ok' ({int(unscored.sum())} such rows)"
        )


def _array(values: list[str]) -> pa.Array:
    return pa.array(values, type=pa.string())


def read_articles(path: str) -> pd.DataFrame:
    """``doc_id`` and ``published`` of an articles Parquet file."""
    schema = pq.read_schema(path)
    missing = [c for c in ("doc_id", "published") if c not in schema.names]
    if missing:
        raise ValueError(f"{path}: missing required column(s) {missing}")
    return pq.read_table(path, columns=["doc_id", "published"]).to_pandas()


#: The model pair store in a data folder: a file, not a folder, so it is neither a table of the
#: catalog nor a document of a release (a cache of the analysis, rebuilt when missing).
PAIR_STORE_FILE = "model_pairs_reuse.parquet"


def pair_store_path(data_dir: str) -> str:
    """Where the analysis of the data folder ``data_dir`` (a path or URL) keeps its pair store."""
    from upath import UPath

    return str(UPath(data_dir) / PAIR_STORE_FILE)


def read_pair_store(path: str) -> tuple[PairStore | None, str | None]:
    """The pair store written at ``path`` by the last analysis, or None and why it cannot be used.

    None without a reason: there is no store yet (a first analysis). An unreadable or damaged
    store is no error either: every pair is then computed, and the reason says what was wrong.
    """
    try:
        frame = read_frame(path)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, pa.ArrowException) as exc:
        return None, f"{path}: unreadable ({exc}); every model pair is computed"
    try:
        return store_from_table(frame), None
    except ValueError as exc:
        return None, f"{path}: damaged ({exc}); every model pair is computed"


def write_pair_store(store: PairStore, path: str) -> None:
    """Write ``store`` at ``path`` (atomically) for the next analysis to reuse."""
    write_frame(path, store.table())


def write_json(obj: Any, out_path: str) -> None:
    """Write ``obj`` as JSON (2-space indent, keys in their order), atomically."""
    _write_converted(jsonable(obj), out_path)


def _write_converted(obj: Any, out_path: str) -> None:
    """:func:`write_json` of an ``obj`` already converted by ``jsonable`` (not converted again:
    a walk over every value of the document, seconds at hundreds of models, issue 37).

    A local file is written as it is encoded: the document is never held as one string and
    its bytes beside the values (hundreds of MB at hundreds of models); the same bytes as
    ``json.dumps`` and the same atomic replacement as ``write_bytes_atomic``.
    """
    encoder = json.JSONEncoder(indent=2, sort_keys=False, allow_nan=False)
    if not is_local(out_path):
        write_bytes_atomic(out_path, (encoder.encode(obj) + "\n").encode("utf-8"))
        return
    target = Path(UPath(out_path).path) if "://" in str(out_path) else Path(out_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:  # name the file asked for, not the temporary one
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(encoder.iterencode(obj))
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # as write_bytes_atomic: results are meant to be read by others
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def estimate_file(
    scores_path: str,
    out_path: str,
    config: ProjectConfig,
    *,
    replicates: int | None = None,
    seed: int | None = None,
    full: bool = False,
    articles_path: str | None = None,
    fertility_path: str | None = None,
    replication_path: str | None = None,
    pair_store_path: str | None = None,
    timings: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Read scores, estimate, write JSON atomically, return the dict.

    With ``full``, optional Parquet files feed H2 (``articles_path``: doc_id, published), the
    nomological network (``fertility_path``: language, fertility) and the cross-corpus
    replication (``replication_path``: a scores file from a run on another corpus).

    Without ``full``: the H1 family on the primary band (only band rows are read). With
    ``full``: the whole suite (``study_results.json`` content); an estimates table is not
    written here (the caller owns table storage). ``pair_store_path`` (with ``full``): the model
    pairs of the last analysis written there are reused where their models' rows and the
    settings are unchanged, and every pair is written back there for the next one (issue 37).
    ``timings`` (with ``full``): filled with the suite's seconds per part (a benchmark's view).
    """
    try:
        result = _estimate(
            scores_path,
            config,
            replicates=replicates,
            seed=seed,
            full=full,
            articles_path=articles_path,
            fertility_path=fertility_path,
            replication_path=replication_path,
            pair_store_path=pair_store_path,
            timings=timings,
        )
    except ValueError as exc:
        if str(scores_path) in str(exc):
            raise
        raise ValueError(f"{scores_path}: {exc}") from exc
    result = jsonable(result)
    _write_converted(result, out_path)
    return result


def _estimate(
    scores_path: str,
    config: ProjectConfig,
    *,
    replicates: int | None,
    seed: int | None,
    full: bool,
    articles_path: str | None,
    fertility_path: str | None = None,
    replication_path: str | None = None,
    pair_store_path: str | None = None,
    timings: dict[str, float] | None = None,
) -> Mapping[str, Any]:
    """The H1 family's dict or, with ``full``, the suite's ``study_results.json`` document."""
    study = config.study
    if not full:
        band = study.band
        scores = read_scores(
            scores_path,
            metrics=(band.metric, "accuracy"),
            filters={
                "context_scope": [band.context_scope],
                "item_source": [band.item_source],
                "level": list(band.levels),
            },
        )
        h1 = estimate_h1(scores, config.languages, study, replicates=replicates, seed=seed)
        h1["settings"]["config_hash"] = config.config_hash
        h1["settings"]["scores_path"] = str(scores_path)
        return h1
    from clcg_pipeline.analysis._suite import suite_owning

    articles = read_articles(articles_path) if articles_path else None
    fertility = pq.read_table(fertility_path).to_pandas() if fertility_path else None
    replication = read_scores(replication_path) if replication_path else None
    # The metrics the suite reads (exact_match only as the band metric): a column less of
    # every scored row. token_f1 stays first, the column read_scores checks on every row.
    metrics = tuple(m for m in _METRICS if m != "exact_match" or study.band.metric == m)
    previous = _previous_pairs(pair_store_path) if pair_store_path else None
    # Handed over in a list, so the suite can free the raw frame once it has its own copy.
    result = suite_owning(
        [read_scores(scores_path, metrics=metrics)],
        config,
        articles=articles,
        fertility=fertility,
        replication_scores=replication,
        replicates=replicates,
        seed=seed,
        pair_store=previous,
    )
    if pair_store_path and result.pair_store is not None:
        write_pair_store(result.pair_store, pair_store_path)
    if timings is not None:
        timings.update(result.timings)
    return result.results


def _previous_pairs(path: str) -> PairStore | None:
    """The store at ``path``; a damaged one is said (a warning) and every pair recomputed."""
    store, why = read_pair_store(path)
    if why is not None:
        warnings.warn(why, stacklevel=3)
    return store
