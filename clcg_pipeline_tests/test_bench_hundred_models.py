"""bench/bench_hundred_models.py: its study set-up and how it sorts what a refresh rewrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline_tests.conftest import PROJECT_ROOT


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "bench"))  # as the scripts find it
    import bench_hundred_models

    return bench_hundred_models


def test_the_study_has_n_fake_models_every_language_covered_and_no_granularity(bench, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    isos = bench.panel(9)  # eu and ne: no synthetic text, English copies with their marker
    bench.write_study_corpus(tmp_path / "corpus", isos, articles=2)
    bench.write_config(tmp_path / "config", tmp_path / "corpus", "http://127.0.0.1:9", isos, models=3)
    bench.add_model(tmp_path / "config", 3, "http://127.0.0.1:9")

    config = load_config(tmp_path / "config")
    assert [m.id for m in config.models.evaluated] == ["fake-000", "fake-001", "fake-002", "fake-003"]
    assert {m.concurrency for m in config.models.evaluated} == {bench.CONCURRENCY}
    assert config.languages.isos == isos and isos[:2] == ["en", "pt"]
    assert list(study_coverage(config).covered) == isos
    assert config.study.granularity.enabled is False
    first = json.loads((tmp_path / "corpus" / "articles" / "ne.jsonl").read_text().splitlines()[0])
    assert first["language"] == "ne" and first["paragraphs"][0]["text"].startswith("[ne] ")


def test_a_refresh_s_rewrites_are_sorted_by_whose_they_are(bench) -> None:  # type: ignore[no-untyped-def]
    before = {
        "responses/language=en/model=fake-000/data.parquet": (1, "a"),
        "items/data.parquet": (1, "i"),
        "study_results.json": (1, "r"),
        "cache/calls/ab/x.json": (1, ""),
        "_records/responses/en%7Cfake-000.json": (1, "x"),
        "_records/paragraphs/en.json": (1, "p"),
    }
    after = {
        "responses/language=en/model=fake-000/data.parquet": (2, "b"),  # an existing model's: rerun
        "responses/language=en/model=fake-001/data.parquet": (2, "n"),  # the new model's
        "items/data.parquet": (2, "i"),  # written again, same bytes
        "study_results.json": (2, "r2"),
        "cache/calls/ab/x.json": (1, ""),
        "cache/calls/cd/y.json": (2, ""),
        "_records/responses/en%7Cfake-000.json": (2, "y"),  # an existing partition's record
        "_records/responses/pt%7Cfake-001.json": (2, "z"),  # the new model's
        "_records/model_calls/fake-001.json": (2, "c"),  # a per-model asset's record
        "_records/paragraphs/en.json": (2, "p2"),  # a language's corpus partition: outside
    }
    found = bench.Rewrites.of(before, after, "fake-001")
    assert found.new_model == [
        "_records/responses/pt%7Cfake-001.json",
        "responses/language=en/model=fake-001/data.parquet",
    ]
    assert found.other_models == {("en", "fake-000")}
    assert found.new_partitions == {("en", "fake-001"), ("pt", "fake-001")}
    assert found.bookkeeping == ["_records/model_calls/fake-001.json", "cache/calls/cd/y.json"]
    assert found.outside == ["_records/paragraphs/en.json", "items/data.parquet", "study_results.json"]
    assert found.same_bytes == {"items/data.parquet"}


def test_make_bench_runs_it_at_a_small_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "bench"))
    import run_all

    launched: list[list[str]] = []
    monkeypatch.setattr(run_all.subprocess, "call", lambda cmd, **_: launched.append(cmd) or 0)
    monkeypatch.setattr(sys, "argv", ["run_all.py", "bench_hundred_models"])
    assert run_all.main() == 0
    [cmd] = launched
    assert cmd[1].endswith("bench_hundred_models.py")
    assert cmd[2:] == ["--models", "5", "--languages", "3"]
