"""clcg reconstruct: the text back from a local corpus, every hash checked, then the estimates again."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from clcg_pipeline.cli._release import reconstruct_command
from clcg_pipeline.release import ReleaseError, reconstruct_release
from clcg_pipeline_tests.demo_study import DemoStudy

# Deidentified in the release for good: what reconstruct cannot (and must not) give back.
DEIDENTIFIED = {
    "human_annotations",
    "human_annotation_revisions",
    "human_validation_joins",
    "annotation_sample",
}


def _stable(document: dict) -> str:
    """As clcg_pipeline_tests/analysis/test_suite.py's ``_stable``: time and checkout left out."""
    document["settings"].pop("generated_at")
    document["settings"].pop("code_version")
    return json.dumps(document, sort_keys=True)


def test_every_table_comes_back_as_the_study_stored_it(
    demo_study: DemoStudy, release: Path, local_corpus: Path, tmp_path: Path
) -> None:
    """Release, take the text away (a reader has only the release and their corpus), rebuild, compare."""
    rebuilt = tmp_path / "rebuilt"
    summary = reconstruct_release(release, rebuilt, source=str(local_corpus))
    assert summary.texts > 400
    files = sorted(p.relative_to(demo_study.data_dir) for p in demo_study.data_dir.rglob("*.parquet"))
    compared = 0
    for relative in files:
        if relative.parts[0] in {"cache", "annotations", "annotation_exports", "annotation_imports"}:
            continue
        table = pq.read_table(rebuilt / relative)
        original = pq.read_table(demo_study.data_dir / relative)
        if relative.parts[0] in DEIDENTIFIED:
            original = original.select(table.column_names)
            kept = [c for c in table.column_names if c not in ("annotator_id", "annotation_id", "annotators")]
            assert table.select(kept).equals(original.select(kept)), relative
        else:
            assert table.equals(original), relative
        compared += 1
    assert compared > 100
    assert (rebuilt / "study_results.json").read_bytes() == (
        demo_study.data_dir / "study_results.json"
    ).read_bytes()


def test_estimate_on_the_rebuilt_folder_reproduces_the_results(
    demo_study: DemoStudy,
    release: Path,
    local_corpus: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from clcg_pipeline.cli import main
    from clcg_pipeline.results import leaf_differences

    rebuilt = tmp_path / "rebuilt"
    args = argparse.Namespace(release=str(release), out=str(rebuilt), source=str(local_corpus))
    assert reconstruct_command(args) == 0
    # The hint names the command that gives the study's whole document back.
    hint = f"next: clcg estimate --config {rebuilt}/config --scores {rebuilt} --full --out study_results.json"
    assert hint in capsys.readouterr().out
    common = ["estimate", "--full", "--replicates", "200"]
    assert (
        main(
            [
                *common,
                "--config",
                str(rebuilt / "config"),
                "--scores",
                str(rebuilt),
                "--out",
                str(tmp_path / "b.json"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                *common,
                "--config",
                str(demo_study.config_dir),
                "--scores",
                str(demo_study.data_dir),
                "--out",
                str(tmp_path / "a.json"),
            ]
        )
        == 0
    )
    again = json.loads((tmp_path / "b.json").read_text())
    assert _stable(again) == _stable(json.loads((tmp_path / "a.json").read_text()))
    # ... and it is the study's study_results.json, every section, leaf by leaf (run metadata aside).
    study = json.loads((demo_study.data_dir / "study_results.json").read_text(encoding="utf-8"))
    assert leaf_differences(study, again) == []


def test_a_text_that_differs_is_named_and_nothing_is_written(
    release: Path, local_corpus: Path, tmp_path: Path
) -> None:
    lines = (local_corpus / "articles" / "pt.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    record["paragraphs"][2]["text"] += " (edited)"
    lines[1] = json.dumps(record, ensure_ascii=False)
    (local_corpus / "articles" / "pt.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    pid = record["paragraphs"][2]["pid"]
    with pytest.raises(
        ReleaseError, match=rf"paragraphs\.text {record['doc_id']}/pt/{pid}: text differs"
    ) as error:
        reconstruct_release(release, tmp_path / "rebuilt", source=str(local_corpus))
    assert "1 of " in str(error.value)
    assert not (tmp_path / "rebuilt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_a_version_missing_from_the_corpus_is_named(
    release: Path, local_corpus: Path, tmp_path: Path
) -> None:
    (local_corpus / "articles" / "ka.jsonl").unlink()
    with pytest.raises(ReleaseError, match=r"paragraphs\.text demo-001/ka/p01: not in the local corpus"):
        reconstruct_release(release, tmp_path / "rebuilt", source=str(local_corpus))
    assert not (tmp_path / "rebuilt").exists()


def test_a_changed_release_file_is_named(release: Path, local_corpus: Path, tmp_path: Path) -> None:
    copy = tmp_path / "release"
    shutil.copytree(release, copy)
    target = next((copy / "scores").rglob("*.parquet"))
    target.write_bytes(target.read_bytes() + b"x")
    with pytest.raises(ReleaseError, match=rf"{target.relative_to(copy).as_posix()}: sha256 differs"):
        reconstruct_release(copy, tmp_path / "rebuilt", source=str(local_corpus))
