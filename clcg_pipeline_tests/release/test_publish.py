"""What a publisher needs: data the Data Package validator accepts, no article text readable beyond
the one rule's threshold, warnings about simulated parts and unidentifiable estimates, and no local
path or private endpoint in what is released."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pyarrow.parquet as pq
import pytest
import yaml

from clcg_pipeline.release import MANIFEST, ReleaseError, build_release
from clcg_pipeline.storage import read_all_partitions
from clcg_pipeline_tests.demo_study import DemoStudy
from clcg_pipeline_tests.release.conftest import FAKE_KEY, PSEUDONYM_KEY

WINDOW = 40  # the width of the windows of paragraph text looked for
# Where the article text lives: the columns a release hashes whole (release.redact's defaults).
HOMES = {
    "paragraphs": "text",
    "articles": "title",
    "items": "question",
    "item_translations": "question_original",
}
EXCLUDED = ("cache", "annotations", "annotation_exports", "annotation_imports", "_records")


def _strings(root: Path, *, skip_homes: bool) -> Iterator[str]:
    """Every string a reader of ``root`` sees: Parquet cells (JSON list cells' items), JSON values, text."""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root)
        if relative.parts[0] in EXCLUDED or path.suffix == ".duckdb":
            continue
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            for column in table.column_names:
                if skip_homes and HOMES.get(relative.parts[0]) == column:
                    continue  # the study's own copy of the article, which no release shows
                for value in table.column(column).to_pylist():
                    yield from _items(value)
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        yield text
        if path.suffix == ".json":
            yield from _items(json.loads(text))


def _items(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
        if value.startswith("["):  # a list column stored as JSON text
            yield from _items(_json_or_none(value))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _items(item)
    elif isinstance(value, list):
        for item in value:
            yield from _items(item)


def _json_or_none(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def readable_share(paragraphs: list[str], root: Path, *, skip_homes: bool = False) -> float:
    """The share of the paragraphs' 40-character windows that some string under ``root`` holds."""
    windows = {p[i : i + WINDOW] for p in paragraphs for i in range(len(p) - WINDOW + 1)}
    seen = {
        s[i : i + WINDOW]
        for s in _strings(root, skip_homes=skip_homes)
        for i in range(len(s) - WINDOW + 1)
        if s[i : i + WINDOW] in windows
    }
    return len(seen) / len(windows)


def test_no_window_of_article_text_can_be_read_back(demo_study: DemoStudy, release: Path) -> None:
    """Before: the study's answers, tasks and drill-down show part of the articles; the release none."""
    paragraphs = read_all_partitions(demo_study.data_dir, "paragraphs")["text"].tolist()
    before = readable_share(paragraphs, demo_study.data_dir, skip_homes=True)
    assert before > 0.05
    assert readable_share(paragraphs, release) == 0.0


def test_the_drilldown_answers_reference_the_paragraphs(demo_study: DemoStudy, release: Path) -> None:
    """study_results.json's drill-down quotes the articles (target_answer): references instead."""
    paragraphs = read_all_partitions(demo_study.data_dir, "paragraphs")["text"].tolist()
    original = json.loads((demo_study.data_dir / "study_results.json").read_text())
    published = json.loads((release / "study_results.json").read_text())
    quoted = [
        (language, i)
        for language, rows in original["drilldown"].items()
        for i, row in enumerate(rows)
        if any(row["target_answer"][:WINDOW] in p for p in paragraphs)
    ]
    assert quoted
    for language, i in quoted:
        assert "[[clcg-" in published["drilldown"][language][i]["target_answer"]
    manifest = json.loads((release / MANIFEST).read_text())
    assert manifest["redaction"]["documents"]["study_results.json"]["strings"] >= len(quoted)
    # Everything but the drill-down is the study's, value for value.
    assert {k: v for k, v in published.items() if k != "drilldown"} == {
        k: v for k, v in original.items() if k != "drilldown"
    }


def test_the_validator_accepts_the_data(release: Path) -> None:
    """frictionless validates every resource's rows (not only the descriptor): no error at all."""
    from frictionless import Package

    report = Package(str(release / "datapackage.json")).validate()
    errors = [f"{task.name}: {e.type} {e.note}" for task in report.tasks for e in task.errors]
    assert errors == []
    document = json.loads((release / "datapackage.json").read_text())
    assert report.stats["tasks"] == len(document["resources"]) > 100  # one resource per file
    fields = {
        (r["path"].split("/")[0], f["name"]): f for r in document["resources"] for f in r["schema"]["fields"]
    }
    assert fields[("estimates", "valid_replicates")]["type"] == "integer"
    assert fields[("annotation_sample", "annotators")]["type"] == "array"
    assert not any("bytes" in r for r in document["resources"])


def test_it_says_what_is_simulated_and_not_identifiable(release: Path) -> None:
    manifest = json.loads((release / MANIFEST).read_text())
    simulated, blind = manifest["caveats"]
    assert simulated.startswith("SIMULATED") and "human_validation" in simulated
    assert "NOT IDENTIFIABLE" in blind
    card = (release / "README.md").read_text()
    assert card.index("## Read this first") < card.index("## What is in it")
    assert "SIMULATED" in card and "NOT IDENTIFIABLE" in card
    # The card's lists are Markdown lists: a blank line, then one item a line.
    assert "Pseudonymized:\n\n- `annotation_sample`: annotators\n- `human_annotation_revisions`" in card


def test_a_publishers_study_is_released_with_references_and_placeholders(
    demo_study: DemoStudy, tmp_path: Path
) -> None:
    """A document quoting a paragraph is released with a reference (never unreleasable for quoting
    its corpus); local paths and a private endpoint become placeholders; a key is refused."""
    config, data = tmp_path / "config", tmp_path / "data"
    shutil.copytree(demo_study.config_dir, config)
    shutil.copytree(demo_study.data_dir, data, ignore=shutil.ignore_patterns(*EXCLUDED))
    sources = yaml.safe_load((config / "sources.yaml").read_text())
    sources["sources"][0]["path"] = "/home/alice/corpora/demo"
    (config / "sources.yaml").write_text(yaml.safe_dump(sources))
    models = yaml.safe_load((config / "models.yaml").read_text())
    endpoint = {"provider": "openai_compatible", "model": "m", "base_url": "http://gpu7.lab.internal:8000/v1"}
    models["models"].append({"id": "lab-llm", **endpoint})
    (config / "models.yaml").write_text(yaml.safe_dump(models))
    paragraph = read_all_partitions(demo_study.data_dir, "paragraphs")["text"].iloc[5]
    notes = {"corpus": "/home/alice/corpora/demo/pt.jsonl", "data": str(data), "quote": f"<{paragraph[:-3]}>"}
    (data / "notes.json").write_text(json.dumps(notes))
    out = tmp_path / "out"
    with mock.patch.dict(os.environ, {"CLCG_RELEASE_KEY": PSEUDONYM_KEY}):
        build_release(data, config, out)
        (data / "notes.json").write_text(json.dumps({"key": FAKE_KEY}))
        with (
            mock.patch.dict(os.environ, {"OPENAI_API_KEY": FAKE_KEY}),
            pytest.raises(ReleaseError, match=r"notes\.json: secret"),
        ):
            build_release(data, config, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    for path in (p for p in out.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        for private in (
            b"/home/alice",
            b"gpu7.lab.internal",
            str(tmp_path).encode(),
            paragraph[:60].encode(),
        ):
            assert private not in raw, (path, private)
    assert yaml.safe_load((out / "config" / "sources.yaml").read_text())["sources"][0]["path"] == "<corpus>"
    assert "<base_url of lab-llm>" in (out / "config" / "models.yaml").read_text()
    digest = hashlib.sha256(paragraph.encode()).hexdigest()
    assert json.loads((out / "notes.json").read_text()) == {
        "corpus": "<corpus>/pt.jsonl",
        "data": "<data>",
        "quote": f"<[[clcg-quote:{digest}:0-{len(paragraph) - 3}]]>",
    }
    assert json.loads((out / MANIFEST).read_text())["sources"]["corpus"]["path"] == "<corpus>"
