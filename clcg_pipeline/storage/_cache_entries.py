"""The call cache's entries as the spend reads them, and, on an object store, a memo of them.

The study's spend (``storage/_paid.py``) counts the cache entries no calls table records as
paid. A local cache's file names are its call ids, so only the files of unrecorded ids are
read; an object store's segments (``calls/_segments.py``) hold many ids each and are read
whole: at every closing line, ~1.5 s on a local S3 server for the bundled demo, the largest
part of a no-op ``clcg run`` (issue 32) once the complete-run memo holds.

So what one reading found is kept in :data:`MEMO` (``<data>/cache/spend_memo/``, beside the
closing lines' ledger: the complete-run memo and releases leave ``cache/`` out), keyed on one
fresh listing of the cache (every object's path, content tag and size) and on the recorded
call ids it was read for. The next reading with the same key reads the memo, not the
segments; a segment another client wrote since, a rewritten single-entry object, a partition
that records more calls: another key, the segments are read and the memo written again. The
memo is written only on such a miss, so a rerun with nothing changed rewrites nothing. A
backend whose listing gives neither a content tag nor a modification time keeps no memo.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import fsspec

from clcg_pipeline.storage._files import write_json

log = logging.getLogger(__name__)

SEGMENTS = "_segments"  # an object-store cache's segments (calls/_segments.py)
MEMO = "spend_memo/unrecorded_entries.json"  # under ``<data>/cache/``
_FORMAT = 1
_STAMPS = ("ETag", "etag", "md5Hash", "LastModified", "mtime", "updated")  # what says an object changed


def parsed(raw: bytes, where: str, call_id: str | None) -> dict[str, Any] | None:
    """One cache entry, or None (with a warning naming it) when it is not one."""
    problem, entry = _checked(raw, where, call_id)
    if problem:
        log.warning("%s", problem)
    return entry


def _checked(raw: bytes, where: str, call_id: str | None) -> tuple[str, dict[str, Any] | None]:
    """(what is wrong with it, "" if nothing; the entry, or None)."""
    try:
        entry = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        entry = None
    if not isinstance(entry, dict) or not isinstance(entry.get("call_id"), str):
        return f"call cache: {where} is not a cache entry; its payment, if any, is not counted", None
    if call_id is not None and entry["call_id"] != call_id:
        return f"call cache: {where} holds call {entry['call_id']}; its payment is not counted", None
    return "", entry


def remote_entries(root: str, recorded: set[str], *, memo: bool = False) -> list[dict[str, Any]]:
    """The entries of an object-store cache (segments, and single objects of older caches)
    whose id is not in ``recorded``; a later segment's entry replaces an earlier one. With
    ``memo``, read from :data:`MEMO` when the cache and ``recorded`` are as it was written for."""
    fs, base = fsspec.core.url_to_fs(root)
    fs.invalidate_cache(base)  # another process may have written segments since
    try:
        listed = fs.find(base, detail=True)
    except FileNotFoundError:
        return []
    singles = [
        path
        for path in sorted(listed)
        if path.endswith(".json")
        and f"/{SEGMENTS}/" not in path
        and "/_meta/" not in path
        and path.rsplit("/", 1)[-1].removesuffix(".json") not in recorded
    ]
    segments = [path for path in sorted(listed) if f"/{SEGMENTS}/" in path and path.endswith(".jsonl")]
    key = _key(listed, singles + segments, recorded) if memo else None
    kept = _memo(fs, base, key)
    if kept is not None:
        return kept
    found, problems = _read(fs, singles + segments, recorded)
    if key is not None:
        _write_memo(fs, base, key, found, problems)
    return found


def _read(fs: Any, paths: list[str], recorded: set[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The unrecorded entries of ``paths`` (read concurrently), and the lines that are none."""
    found: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for path, raw in fs.cat(paths, on_error="raise").items() if paths else ():
        for number, line in enumerate(raw.splitlines(), 1):
            problem, entry = _checked(line, f"{path} line {number}", None)
            if problem:
                log.warning("%s", problem)
                problems.append(problem)
            elif entry is not None and entry["call_id"] not in recorded:
                found[entry["call_id"]] = entry
    return list(found.values()), problems


def _key(listed: dict[str, dict[str, Any]], paths: list[str], recorded: set[str]) -> str | None:
    """The memo's key: every read object's path, stamps and size, and the recorded ids; None
    when the listing says nothing that changes with an object's contents."""
    digest = hashlib.sha256()
    for path in paths:
        info = listed[path]
        stamps = [str(info[name]) for name in _STAMPS if info.get(name)]
        if not stamps:
            return None
        digest.update(json.dumps([path, stamps, info.get("size")]).encode("utf-8"))
    digest.update(b"\0" + "\n".join(sorted(recorded)).encode("utf-8"))
    return digest.hexdigest()


def _memo_path(base: str) -> str:
    """``<data>/cache/spend_memo/...`` from the cache's ``<data>/cache/calls``."""
    return f"{base.rstrip('/').rsplit('/', 1)[0]}/{MEMO}"


def _memo(fs: Any, base: str, key: str | None) -> list[dict[str, Any]] | None:
    """The memo's entries when it was written for ``key``; its problems are warned again."""
    if key is None:
        return None
    try:
        kept = json.loads(fs.cat_file(_memo_path(base)))
    except (OSError, ValueError):
        return None  # none yet, or unreadable: the segments are read (and it is written again)
    if not isinstance(kept, dict) or kept.get("format") != _FORMAT or kept.get("key") != key:
        return None
    for problem in kept.get("problems", []):
        log.warning("%s", problem)
    entries = kept.get("entries")
    return entries if isinstance(entries, list) else None


def _write_memo(fs: Any, base: str, key: str, found: list[dict[str, Any]], problems: list[str]) -> None:
    """Keep what was read for ``key``; a folder this host may not write keeps none (the spend
    is read, only not remembered)."""
    document = {"format": _FORMAT, "key": key, "entries": found, "problems": problems}
    try:
        write_json(f"{fs.unstrip_protocol(_memo_path(base))}", document, compact=True)
    except (OSError, ValueError) as exc:  # ValueError: an entry JSON cannot hold (NaN)
        log.debug("call cache: no spend memo written (%s)", exc)
