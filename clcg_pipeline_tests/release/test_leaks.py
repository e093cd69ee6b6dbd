"""Nothing leaks: no paragraph, source question, annotator id or key in any file of the release."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq

from clcg_pipeline.release import scan_release
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


def test_the_scan_finds_runs_of_article_text_and_whole_texts_in_its_own_files(tmp_path: Path) -> None:
    """The leak check applies the same rule: a run of ``width`` characters in a study document,
    a whole text in a file the release writes itself; names the hash and span, not the text."""
    paragraph = "The second phase of the works lasted from June to August and closed the bridge."
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "study.yaml").write_text(f"# {paragraph}\n")
    (tmp_path / "notes.json").write_text(json.dumps({"a": f"so: <{paragraph[4:40]}>", "doc_id": "x"}))
    (tmp_path / "fine.json").write_text(json.dumps({"a": paragraph[4:20]}))  # shorter than width
    hits = scan_release(tmp_path, [paragraph], {}, width=20)
    digest = hashlib.sha256(paragraph.encode()).hexdigest()
    assert hits == [
        f"config/study.yaml: redacted text sha256 {digest}",
        f"notes.json: redacted text sha256 {digest}[4:40]",
    ]
