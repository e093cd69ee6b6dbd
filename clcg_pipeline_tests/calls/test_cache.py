from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallCache

CID = "ab" + "0" * 62


def _writer(root: str, n: int) -> None:
    cache = CallCache(root)
    for i in range(n):
        cache.put(CID, {"text": "x" * 50_000, "writer": os.getpid(), "i": i})


def test_put_get_roundtrip_and_layout(tmp_path: Path) -> None:
    cache = CallCache(str(tmp_path))
    assert cache.get(CID) is None and not cache.exists(CID)
    cache.put(CID, {"text": "hello", "outcome": "ok"})
    assert (tmp_path / "ab" / f"{CID}.json").is_file()
    got = cache.get(CID)
    assert got is not None and got["text"] == "hello" and got["call_id"] == CID
    assert cache.exists(CID)


def test_corrupt_or_foreign_entry_reads_as_absent(tmp_path: Path) -> None:
    cache = CallCache(str(tmp_path))
    path = tmp_path / "ab" / f"{CID}.json"
    path.parent.mkdir()
    path.write_text('{"call_id": "ab00", "text": "trunc')
    assert cache.get(CID) is None
    path.write_text('{"call_id": "other", "text": "x"}')
    assert cache.get(CID) is None


def test_rejects_non_hex_ids(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="hex"):
        CallCache(str(tmp_path)).get("../../etc/passwd")


def test_concurrent_processes_never_expose_partial_files(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), 40)) for _ in range(3)]
    for p in procs:
        p.start()
    cache = CallCache(str(tmp_path))
    reads = 0
    while any(p.is_alive() for p in procs):
        entry = cache.get(CID)
        if entry is not None:
            # get() returns None on a torn read, so a complete entry is the only alternative.
            assert len(entry["text"]) == 50_000
            reads += 1
        path = tmp_path / "ab" / f"{CID}.json"
        if path.exists():
            raw = path.read_bytes()
            assert raw.endswith(b"}")  # never a half-written file under the final name
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert reads > 0
    leftovers = [p.name for p in (tmp_path / "ab").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_meta_records(tmp_path: Path) -> None:
    cache = CallCache(str(tmp_path))
    cache.put_meta("batch-x", {"id": "b1"})
    assert cache.get_meta("batch-x") == {"id": "b1"}
    cache.delete_meta("batch-x")
    assert cache.get_meta("batch-x") is None
