from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from pathlib import Path

import fsspec
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


# On an object store (a local S3 server): entries in segments, read through an index.


def _ids(n: int) -> list[str]:
    return [f"{i:02x}" + "f" * 62 for i in range(n)]


def test_a_batch_on_an_object_store_is_one_object_that_another_process_reads(bucket: str) -> None:
    root = f"s3://{bucket}/cache"
    writer = CallCache(root)
    assert writer.remote and writer.get(CID) is None
    entries = {call_id: {"text": f"answer {i}", "outcome": "ok"} for i, call_id in enumerate(_ids(5))}
    writer.put_many(entries)
    fs, path = fsspec.core.url_to_fs(root)
    assert [p.rsplit("/", 2)[-2] for p in fs.find(path)] == ["_segments"]  # one object for five calls
    reader = CallCache(root)  # as another process would open it
    assert {cid: reader.get(cid)["text"] for cid in entries} == {  # type: ignore[index]
        cid: entry["text"] for cid, entry in entries.items()
    }
    assert reader.exists(_ids(5)[0]) and not reader.exists(CID)


def test_an_entry_written_elsewhere_is_seen_by_a_fresh_lookup(bucket: str) -> None:
    root = f"s3://{bucket}/cache"
    reader, writer = CallCache(root), CallCache(root)
    listed = time.monotonic()
    assert reader.get(CID) is None  # the index is listed now
    writer.put(CID, {"text": "late", "outcome": "ok"})
    # A lookup for what was written before ``listed`` trusts that listing (one request serves
    # every call waiting meanwhile); one for what was written before now lists again.
    assert reader.get_fresh(CID, listed) is None
    entry = reader.get_fresh(CID, time.monotonic())
    assert entry is not None and entry["text"] == "late"


def test_an_older_cache_of_one_object_per_call_and_a_bad_segment_line(bucket: str) -> None:
    root = f"s3://{bucket}/cache"
    fs, path = fsspec.core.url_to_fs(root)
    fs.pipe_file(f"{path}/ab/{CID}.json", json.dumps({"call_id": CID, "text": "old"}).encode())
    good = "cd" + "0" * 62
    fs.pipe_file(
        f"{path}/_segments/0-x.jsonl",
        b'{"call_id": "' + good.encode() + b'", "text": "kept"}\n{"call_id": "ef00", "tex\n',
    )
    cache = CallCache(root)
    assert cache.get(CID)["text"] == "old"  # type: ignore[index]
    assert cache.get(good)["text"] == "kept"  # type: ignore[index]
    assert cache.get("ef" + "0" * 62) is None
