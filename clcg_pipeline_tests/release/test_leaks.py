"""Nothing leaks: no paragraph, source question, annotator id or key in any file of the release."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from unittest import mock

import pyarrow.parquet as pq
import pytest

from clcg_pipeline.release import ReleaseError, build_release
from clcg_pipeline.storage import read_all_partitions
from clcg_pipeline_tests.demo_study import DemoStudy
from clcg_pipeline_tests.release.conftest import FAKE_KEY, PSEUDONYM_KEY

HUMAN = ("human_annotations", "human_annotation_revisions", "human_validation_joins")


def _needles(demo_study: DemoStudy) -> dict[str, set[str]]:
    """Every redacted text and every identifier of the demo study, by kind."""
    items = read_all_partitions(demo_study.data_dir, "items")
    annotators = {
        a for t in HUMAN for a in read_all_partitions(demo_study.data_dir, t)["annotator_id"].dropna()
    }
    sample = read_all_partitions(demo_study.data_dir, "annotation_sample")["annotators"].dropna()
    annotators |= {name for names in sample for name in names}
    return {
        "paragraph": set(read_all_partitions(demo_study.data_dir, "paragraphs")["text"]),
        "title": set(read_all_partitions(demo_study.data_dir, "articles")["title"]),
        "source question": set(items.loc[items["item_source"] == "human", "question"]),
        "annotator id": annotators,
        "secret": {FAKE_KEY, PSEUDONYM_KEY},
    }


def _cell_strings(path: Path) -> list[str]:
    table = pq.read_table(path)
    out: list[str] = []
    for column in table.columns:
        for value in column.to_pylist():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str):
                    out.append(item)
    return out


def test_the_demo_needles_are_real(demo_study: DemoStudy) -> None:
    """The scan below looks for something: the study holds every kind, and the raw bytes hold them."""
    needles = _needles(demo_study)
    assert all(needles.values()) and len(needles["paragraph"]) > 300 and len(needles["annotator id"]) > 100
    paragraphs = b"".join(p.read_bytes() for p in (demo_study.data_dir / "paragraphs").rglob("*.parquet"))
    assert any(text.encode() in paragraphs for text in needles["paragraph"])  # found where it is


def test_no_file_of_the_release_holds_any_of_them(demo_study: DemoStudy, release: Path) -> None:
    needles = _needles(demo_study)
    hits = []
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        data = path.read_bytes()
        strings = _cell_strings(path) if path.suffix == ".parquet" else [data.decode("utf-8", "replace")]
        for kind, values in needles.items():
            for value in values:
                # Bytes (uncompressed Parquet: a text is its bytes) and decoded values both.
                if value.encode() in data or any(value in s for s in strings):
                    hits.append(f"{path.relative_to(release)}: {kind} {value[:30]!r}")
    assert hits == []


def test_a_leak_stops_the_build(demo_study: DemoStudy, tmp_path: Path) -> None:
    """A document quoting a paragraph, or a key in a file, is refused: no release is written."""
    data = tmp_path / "data"
    shutil.copytree(demo_study.data_dir, data, ignore=shutil.ignore_patterns("cache", "annotations"))
    paragraph = read_all_partitions(demo_study.data_dir, "paragraphs")["text"].iloc[5]
    (data / "notes.json").write_text(json.dumps({"excerpt": f"as the article says: {paragraph}"}))
    with mock.patch.dict(os.environ, {"CLCG_RELEASE_KEY": PSEUDONYM_KEY}):
        with pytest.raises(ReleaseError, match=r"leak 1 thing\(s\).*notes\.json: redacted text"):
            build_release(data, demo_study.config_dir, tmp_path / "out")
        assert not (tmp_path / "out").exists()
        (data / "notes.json").write_text(json.dumps({"key": FAKE_KEY}))
        with (
            mock.patch.dict(os.environ, {"OPENAI_API_KEY": FAKE_KEY}),
            pytest.raises(ReleaseError, match=r"notes\.json: secret"),
        ):
            build_release(data, demo_study.config_dir, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
