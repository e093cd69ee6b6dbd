"""clcg release: source text as hashes, the rest whole, human validation deidentified, manifest and card."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
from pathlib import Path
from unittest import mock

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from clcg_pipeline.cli._release import release_command
from clcg_pipeline.release import MANIFEST, MARKER, ReleaseError, build_release, text_hash
from clcg_pipeline.storage import read_all_partitions
from clcg_pipeline_tests.demo_study import DemoStudy
from clcg_pipeline_tests.release.conftest import PSEUDONYM_KEY

# The columns of the results tables that hold text a model or judge wrote (it may quote the article).
TEXT_COLUMNS = {"predictions": ("answer",), "error_judgements": ("evidence",)}


def _marker_hash(value: str) -> str:
    match = MARKER.fullmatch(value)
    assert match, f"not a redaction marker: {value[:40]!r}"
    return match.group(1)


def test_paragraphs_titles_and_source_questions_become_their_hashes(
    demo_study: DemoStudy, release: Path
) -> None:
    original = read_all_partitions(demo_study.data_dir, "paragraphs").sort_values(
        ["doc_id", "language", "pid"]
    )
    released = read_all_partitions(release, "paragraphs").sort_values(["doc_id", "language", "pid"])
    assert len(released) == len(original) > 300
    assert [_marker_hash(v) for v in released["text"]] == [text_hash(t) for t in original["text"]]
    titles = read_all_partitions(release, "articles")
    assert all(MARKER.fullmatch(t) for t in titles["title"])
    items = read_all_partitions(demo_study.data_dir, "items").set_index("item_id")
    out = read_all_partitions(release, "items").set_index("item_id").loc[items.index]
    human = items["item_source"] == "human"
    assert human.sum() > 0 and (~human).sum() > 0
    assert [_marker_hash(q) for q in out.loc[human, "question"]] == [
        text_hash(q) for q in items.loc[human, "question"]
    ]
    # Generated items and gold answers are the study's own: kept, but for the runs of article
    # text in them (the one rule, test_spans.py), which reference the paragraph instead.
    for column, rows in (("question", ~human), ("gold_answer", human | ~human)):
        kept = out.loc[rows, column] == items.loc[rows, column]
        assert kept.sum() > 0
        assert out.loc[rows, column][~kept].str.contains(r"\[\[clcg-(?:redacted|quote):", regex=True).all()


def test_the_index_keys_every_hash_by_pid_and_item(demo_study: DemoStudy, release: Path) -> None:
    index = pq.read_table(release / "release" / "text_index.parquet").to_pandas()
    paragraphs = read_all_partitions(demo_study.data_dir, "paragraphs")
    rows = index[index["table"] == "paragraphs"].merge(paragraphs, on=["doc_id", "language", "pid"])
    assert len(rows) == len(paragraphs)
    assert (rows["sha256"] == [text_hash(t) for t in rows["text"]]).all()
    questions = index[(index["table"] == "items") & (index["column"] == "question")]
    items = read_all_partitions(demo_study.data_dir, "items")
    assert sorted(questions["item_id"]) == sorted(items.loc[items["item_source"] == "human", "item_id"])
    assert "text" not in index


def test_quotes_of_a_paragraph_elsewhere_are_hashed_too(demo_study: DemoStudy, release: Path) -> None:
    """A response that copies a paragraph (the offline reader's paragraph fill does) holds a marker."""
    paragraphs = set(read_all_partitions(demo_study.data_dir, "paragraphs")["text"])
    before = read_all_partitions(demo_study.data_dir, "task_predictions")
    after = read_all_partitions(release, "task_predictions")
    copied = before["answer"].fillna("").map(lambda a: any(p in a for p in paragraphs))
    assert copied.sum() > 0
    assert after.loc[copied.to_numpy(), "answer"].str.contains(r"\[\[clcg-redacted:", regex=True).all()
    # An answer without article text is whole; one with a run of it holds a reference instead.
    changed = after["answer"].fillna("").to_numpy() != before["answer"].fillna("").to_numpy()
    assert (~changed).sum() > 0
    assert after.loc[changed, "answer"].str.contains(r"\[\[clcg-(?:redacted|quote):", regex=True).all()


@pytest.mark.parametrize("table", ["scores", "predictions", "estimates", "error_judgements", "task_scores"])
def test_results_tables_are_kept_whole(demo_study: DemoStudy, release: Path, table: str) -> None:
    """Every number and label whole; only the text columns' runs of article text are references."""
    for file in sorted((demo_study.data_dir / table).rglob("*.parquet")):
        original = pq.read_table(file)
        kept = [f.name for f in original.schema if f.name not in TEXT_COLUMNS.get(table, ())]
        released = pq.read_table(release / file.relative_to(demo_study.data_dir))
        assert released.select(kept).equals(original.select(kept)), file


def test_documents_and_config_are_copied_byte_for_byte(demo_study: DemoStudy, release: Path) -> None:
    """Documents without article text (or local paths) byte for byte; study_results.json holds
    the drill-down's answers, whose article text is referenced (test_reconstruct restores it)."""
    for name in ("human_validation_results.json", "granularity_results.json"):
        assert (release / name).read_bytes() == (demo_study.data_dir / name).read_bytes()
    assert (release / "config" / "study.yaml").read_bytes() == (
        demo_study.config_dir / "study.yaml"
    ).read_bytes()
    for left_out in ("cache", "annotations", "_records", "report.html", "clcg.duckdb", "annotation_imports"):
        assert not (release / left_out).exists()


def test_annotators_get_stable_keyed_pseudonyms_and_identifying_columns_go(
    demo_study: DemoStudy, release: Path
) -> None:
    before = read_all_partitions(demo_study.data_dir, "human_annotations").sort_values("annotation_id")
    after = read_all_partitions(release, "human_annotations")
    expected = [
        "anon-" + hmac.new(PSEUDONYM_KEY.encode(), raw.encode(), hashlib.sha256).hexdigest()[:16]
        for raw in before["annotator_id"]
    ]
    by_row = after.set_index(after["annotation_id"]).loc[
        [
            "anon-" + hmac.new(PSEUDONYM_KEY.encode(), a.encode(), hashlib.sha256).hexdigest()[:16]
            for a in before["annotation_id"]
        ]
    ]
    assert by_row["annotator_id"].tolist() == expected
    for gone in ("comment", "seconds", "imported_at", "source_file", "record", "ls_annotation_id"):
        assert gone not in after
    # The QC outcome stays, row for row.
    assert by_row["attention_passed"].tolist() == before["attention_passed"].tolist()
    joins = pq.read_table(release / "human_validation_joins" / "data.parquet").to_pandas()
    assert set(joins["annotator_id"]) <= set(after["annotator_id"]) and "seconds" not in joins
    assert "qc_step" in joins and joins["qc_step"].notna().all()
    sample = pq.read_table(release / "annotation_sample" / "data.parquet").to_pandas()
    # A list column is JSON text in the release (what the Data Package validator reads).
    names = [name for cell in sample["annotators"].dropna() for name in json.loads(cell)]
    assert names and all(name.startswith("anon-") for name in names)


def test_the_manifest_lists_every_file_and_source_version(demo_study: DemoStudy, release: Path) -> None:
    manifest = json.loads((release / MANIFEST).read_text())
    listed = {entry["path"]: entry for entry in manifest["files"]}
    on_disk = {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()} - {MANIFEST}
    assert set(listed) == on_disk
    for path, entry in listed.items():
        assert hashlib.sha256((release / path).read_bytes()).hexdigest() == entry["sha256"]
    articles = read_all_partitions(demo_study.data_dir, "articles")
    versions = {(v["article"], v["language"]): v for v in manifest["sources"]["versions"]}
    assert set(versions) == set(zip(articles["doc_id"], articles["language"], strict=True))
    assert versions[("demo-001", "en")]["pipeline"]["audit"]["complete"] is True
    results = json.loads((demo_study.data_dir / "study_results.json").read_text())
    assert manifest["study"]["config_hash"] == results["settings"]["config_hash"]
    assert manifest["study"]["code_version"] == results["settings"]["code_version"]["git_commit"]
    judgements = read_all_partitions(demo_study.data_dir, "error_judgements")
    hashes = {p.get("template_hash") for p in manifest["prompts"] if p["table"] == "error_judgements"}
    assert hashes == set(judgements["template_hash"])
    assert {m["id"] for m in manifest["models"]} >= {"lexical-reader"}
    card = (release / "README.md").read_text()
    assert "How to cite" in card and "What was removed" in card and "paragraphs.text" in card


def test_datapackage_is_valid_and_covers_every_table(release: Path) -> None:
    from frictionless import Package

    document = json.loads((release / "datapackage.json").read_text())
    assert Package.validate_descriptor(document).valid
    paths = {
        p for r in document["resources"] for p in ([r["path"]] if isinstance(r["path"], str) else r["path"])
    }
    assert paths == {p.relative_to(release).as_posix() for p in release.rglob("*.parquet")}


def test_a_licensed_column_is_kept_and_an_unknown_one_is_refused(
    demo_study: DemoStudy, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    shutil.copytree(demo_study.config_dir, config)
    study = yaml.safe_load((config / "study.yaml").read_text())
    kept = [e for e in study.get("release", {}).get("redact", []) or [] if e != "articles.title"]
    study["release"] = {"redact": kept or ["paragraphs.text", "items.question"]}
    (config / "study.yaml").write_text(yaml.safe_dump(study))
    with mock.patch.dict(os.environ, {"CLCG_RELEASE_KEY": "k" * 12}):
        build_release(demo_study.data_dir, config, tmp_path / "kept")
    titles = read_all_partitions(tmp_path / "kept", "articles")["title"]
    assert titles.tolist() == read_all_partitions(demo_study.data_dir, "articles")["title"].tolist()
    study["release"] = {"redact": ["paragraphs.text", "scores.token_f1"]}
    (config / "study.yaml").write_text(yaml.safe_dump(study))
    with pytest.raises(ReleaseError, match=r"scores\.token_f1 cannot be redacted"):
        build_release(demo_study.data_dir, config, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_bad_requests_fail_before_anything_is_written(
    demo_study: DemoStudy, release: Path, tmp_path: Path
) -> None:
    with pytest.raises(ReleaseError, match="already exists"):
        build_release(demo_study.data_dir, demo_study.config_dir, release)
    (tmp_path / "unfinished").mkdir()
    with pytest.raises(ReleaseError, match=r"no study_results\.json"):
        build_release(tmp_path / "unfinished", demo_study.config_dir, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_without_a_key_pseudonyms_are_random_and_it_says_so(
    demo_study: DemoStudy, tmp_path: Path, capsys
) -> None:
    import argparse

    env = {k: v for k, v in os.environ.items() if k != "CLCG_RELEASE_KEY"}
    with (
        mock.patch.dict(os.environ, env, clear=True),
        pytest.warns(UserWarning, match="CLCG_RELEASE_KEY is not set"),
    ):
        args = argparse.Namespace(
            data=str(demo_study.data_dir), config=str(demo_study.config_dir), out=str(tmp_path / "r")
        )
        assert release_command(args) == 0
    printed = capsys.readouterr()
    assert "release:" in printed.out
    # The demo's simulated annotators and unidentifiable estimates are said where a publisher looks.
    assert (
        "warning: SIMULATED data: " in printed.err
        and "warning: headline estimates NOT IDENTIFIABLE" in printed.err
    )
    manifest = json.loads((tmp_path / "r" / MANIFEST).read_text())
    assert "random key" in manifest["deidentification"]["pseudonyms"]
    ids = pd.read_parquet(tmp_path / "r" / "human_annotations" / "data.parquet")["annotator_id"]
    raw = read_all_partitions(demo_study.data_dir, "human_annotations")["annotator_id"]
    assert ids.nunique() == raw.nunique()


def test_a_leaderboard_that_does_not_fit_its_shape_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    """Issue 34: the release checks leaderboard.json against ``LeaderboardDocument`` before
    copying it; a rank given as text is refused naming the file and the field."""
    from clcg_pipeline.storage import LeaderboardDocument, LeaderboardRow, LeaderboardTies

    columns = list(LeaderboardRow.model_fields)
    row = dict.fromkeys(columns) | {"model": "m1", "identifiable": True, "rank": 1.0}
    document = LeaderboardDocument.model_validate(
        {
            "columns": columns,
            "status": "estimated",
            "ranking": None,
            "tie_groups": LeaderboardTies(),
            "models": [row],
        }
    ).model_dump(mode="json")
    document["models"][0]["rank"] = "1"
    data = tmp_path / "data"
    data.mkdir()
    (data / "study_results.json").write_text("{}", encoding="utf-8")
    (data / "leaderboard.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ReleaseError, match=r"leaderboard\.json: field models\[0\]\.rank: .*nothing written"):
        build_release(data, tmp_path / "no-config", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
