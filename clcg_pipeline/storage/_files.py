"""Where tables live and how they are written: hive-style Parquet, atomically.

Paths are ``UPath``s so the data folder can be a local directory or an fsspec URL
(``s3://bucket/clcg``); only local writes need the temp-file-and-rename dance, since an
object-store PUT is already all-or-nothing.

Several writers (two hosts, two processes) may write one partition at once. A table that is
read, merged and written again (:func:`update_frame`, the calls tables' record of payment) is
never a lost update: on a local folder the three steps hold a kernel lock on a file beside the
table; on S3 the write is conditional on the object being the one read (``If-Match`` its ETag,
``If-None-Match: *`` when there was none), and a writer that lost the race reads the winner's
table, merges again and retries. A remote table is read in one request pinned to one ETag, so
another writer replacing it mid-read costs a re-read, never a ``PreconditionFailed`` crash.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from clcg_pipeline.storage._tables import TABLES, conform

DATA_FILE = "data.parquet"
# Bounded retries of a read or conditional write that another writer raced (see the docstring).
_ATTEMPTS = 8
_PAUSE_S = 0.05  # the first pause; doubled each attempt, with jitter so two losers do not collide again
# S3 error codes of a lost race: a condition that no longer held, or a concurrent conditional write.
_RACE_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "412", "409"})
_CONDITIONAL_PROTOCOLS = frozenset({"s3", "s3a"})
_ONE_PUT = 2**32  # s3fs sends a payload under min(5 GiB, 2 x chunksize) as one PUT: conditions need one


class ConcurrentWriteError(RuntimeError):
    """Other writers kept replacing a table between this writer's read and its write."""


# A remote UPath is not os.PathLike (it has no local path), so it is named as well.
def data_root(data_dir: str | os.PathLike[str] | UPath) -> UPath:
    return UPath(data_dir)


def partition_dir(
    data_dir: str | os.PathLike[str] | UPath, table: str, partition: Mapping[str, str] | None
) -> UPath:
    """``<data>/<table>/<dim>=<value>/...`` with dimensions in the given order (hive layout)."""
    path = data_root(data_dir) / table
    for dim, value in (partition or {}).items():
        path = path / f"{dim}={value}"
    return path


def table_glob(data_dir: str | os.PathLike[str] | UPath, table: str) -> str:
    """A glob matching every partition file of ``table`` (for DuckDB and fsspec).

    Local folders give a plain path (DuckDB does not read ``file://`` URLs); remote ones keep
    their URL, read through the filesystem ``connect_duckdb`` registers.
    """
    root = data_root(data_dir)
    base = str(Path(root.path)) if _is_local(root) else str(root).rstrip("/")
    return f"{base}/{relative_table_glob(table)}"


def relative_table_glob(table: str) -> str:
    """``<table>/**/*.parquet``: the glob a portable catalog's view stores (see ``_catalog``)."""
    return f"{table}/**/*.parquet"


def _is_local(path: UPath) -> bool:
    return path.protocol in ("", "file", "local")


def write_bytes_atomic(path: UPath | Path | str, payload: bytes) -> None:
    """Write ``payload`` so a reader sees the old file or the new one, never half of it."""
    target = UPath(path)
    if not _is_local(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(payload)
        return
    local = Path(target.path)
    local.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=local.parent, prefix=f".{local.name}.", suffix=".tmp")
    except OSError as exc:  # name the file the user asked for, not the temporary one
        raise OSError(exc.errno, exc.strerror, str(local)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; tables and results are meant to be read by others
        os.replace(tmp, local)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table(path: UPath | Path | str, table: pa.Table) -> None:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    write_bytes_atomic(path, sink.getvalue().to_pybytes())


def write_frame(path: UPath | Path | str, frame: pd.DataFrame, *, contract: str | None = None) -> pa.Table:
    """Write a DataFrame, conformed to ``contract`` (a name in ``TABLES``) when given."""
    table = _to_table(frame, contract)
    write_table(path, table)
    return table


def _to_table(frame: pd.DataFrame, contract: str | None) -> pa.Table:
    if contract is not None and contract in TABLES:
        return conform(contract, frame)
    return pa.Table.from_pandas(frame, preserve_index=False)


def _frame_bytes(frame: pd.DataFrame, contract: str | None) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(_to_table(frame, contract), sink, compression="zstd")
    return bytes(sink.getvalue().to_pybytes())


def read_frame(path: UPath | Path | str) -> pd.DataFrame:
    target = UPath(path)
    if _is_local(target):  # an open local file survives its replacement by os.replace
        with target.open("rb") as handle:
            return pq.read_table(handle).to_pandas()
    payload, _ = _read_tagged(target)
    if payload is None:
        raise FileNotFoundError(f"no table stored at {target}")
    return _parse(payload)


def _parse(payload: bytes) -> pd.DataFrame:
    return pq.read_table(pa.BufferReader(payload)).to_pandas()


def _lost_race(exc: BaseException) -> bool:
    """Whether an fsspec error is S3 saying another writer changed the object first."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, FileExistsError):  # s3fs's translation of a failed If-None-Match
            return True
        response = getattr(seen, "response", None)  # botocore's ClientError, kept as the cause
        if isinstance(response, dict) and response.get("Error", {}).get("Code") in _RACE_CODES:
            return True
        seen = seen.__cause__
    return False


def _pause(attempt: int) -> None:
    time.sleep(_PAUSE_S * 2**attempt * random.uniform(0.5, 1.5))


def _read_tagged(target: UPath) -> tuple[bytes | None, str | None]:
    """A remote object's bytes and the ETag they are (``(None, None)`` when there is none).

    One GET of the whole object, conditional on the ETag its HEAD gave: the bytes are that
    version's, or the GET fails and the object is read again (another writer replaced it).
    """
    fs = target.fs
    for attempt in range(_ATTEMPTS):
        fs.invalidate_cache(target.path)  # a listing cached earlier would give an old ETag
        try:
            with fs.open(target.path, "rb", cache_type="all") as handle:
                return handle.read(), handle.details.get("ETag")
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            if not _lost_race(exc):
                raise
        _pause(attempt)
    raise ConcurrentWriteError(f"{target}: replaced by other writers during each of {_ATTEMPTS} reads")


def _put_if_unchanged(target: UPath, payload: bytes, etag: str | None) -> None:
    """Write ``payload`` only if the object is still the one read (ETag ``etag``, or absent)."""
    condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
    target.fs.pipe_file(target.path, payload, chunksize=_ONE_PUT, **condition)


@contextlib.contextmanager
def _locked(local: Path) -> Iterator[None]:
    """Hold an exclusive kernel lock on ``.<name>.lock`` beside ``local`` (freed if the holder dies)."""
    local.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(local.parent / f".{local.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits for another writer's read-merge-write (milliseconds)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def update_frame(
    path: UPath | Path | str,
    merge: Callable[[pd.DataFrame | None], pd.DataFrame],
    *,
    contract: str | None = None,
) -> pd.DataFrame:
    """Write ``merge(stored table or None)`` at ``path`` with no lost update; returns what was written.

    ``merge`` may run more than once: again on the table another writer wrote meanwhile.
    """
    target = UPath(path)
    if _is_local(target):
        with _locked(Path(target.path)):
            frame = merge(read_frame(target) if target.exists() else None)
            write_frame(target, frame, contract=contract)
            return frame
    if target.protocol not in _CONDITIONAL_PROTOCOLS:  # no conditional PUT known: last writer wins
        frame = merge(read_frame(target) if target.exists() else None)
        write_frame(target, frame, contract=contract)
        return frame
    return _update_remote(target, merge, contract)


def _update_remote(
    target: UPath, merge: Callable[[pd.DataFrame | None], pd.DataFrame], contract: str | None
) -> pd.DataFrame:
    """Read, merge and conditionally write, again on the winner's table after a lost race."""
    for attempt in range(_ATTEMPTS):
        payload, etag = _read_tagged(target)
        frame = merge(None if payload is None else _parse(payload))
        try:
            _put_if_unchanged(target, _frame_bytes(frame, contract), etag)
            return frame
        except OSError as exc:
            if not _lost_race(exc):
                raise
        _pause(attempt)
    raise ConcurrentWriteError(
        f"{target}: other writers replaced it before each of {_ATTEMPTS} writes; nothing was lost, "
        "run again to write this partition"
    )


def write_json(path: UPath | Path | str, document: Any, *, compact: bool = False) -> None:
    """``document`` as JSON with sorted keys and a final newline, atomically: indented by two
    spaces, or ``compact`` (no indentation, no space after a separator: the documents assets
    return, study_results.json among them, of which the indentation was about 40% at hundreds
    of models, issue 37; ``python -m json.tool`` or ``jq .`` indents one to read it)."""
    layout: dict[str, Any] = {"separators": (",", ":")} if compact else {"indent": 2}
    payload = json.dumps(document, sort_keys=True, ensure_ascii=False, allow_nan=False, **layout)
    write_bytes_atomic(path, payload.encode("utf-8") + b"\n")


def read_json(path: UPath | Path | str) -> Any:
    return json.loads(UPath(path).read_text(encoding="utf-8"))
