"""A rebuild that matches: study_results.json re-derived from a rebuilt folder equals the study's,
every section, leaf by leaf, except the documented run metadata (docs/RELEASE.md)."""

from __future__ import annotations

import argparse
import copy
import importlib.resources
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from clcg_pipeline.cli._release import reconstruct_command, verify_rebuilt
from clcg_pipeline.config import load_config
from clcg_pipeline.release import reconstruct_release
from clcg_pipeline.results import (
    RUN_METADATA,
    STUDY_SECTIONS,
    as_written,
    derive_sections,
    derive_study_results,
    leaf_differences,
    sections_from_documents,
)
from clcg_pipeline.storage import read_json
from clcg_pipeline_tests.conftest import DEFAULT_CONFIG
from clcg_pipeline_tests.demo_study import DemoStudy

# The studies' sections and the panel's: what `clcg estimate --full` never re-derived.
SECTIONS = ("drilldown", "error_taxonomy", "granularity", "human_validation", "languages_without_data")
# The sections a re-derivation from a REBUILT folder still takes from the released document, each
# with what the release leaves out that its statistics need (docs/RELEASE.md, "A rebuild that
# matches"). Every other section is recomputed from the tables.
TAKEN_FROM_DOCUMENTS = {
    # The QC's speed rule reads each rating's seconds, which release.drop leaves out (timing).
    "human_validation": "human_annotations.seconds",
}


@pytest.fixture(scope="module")
def rebuilt(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's release rebuilt from a copy of the demo corpus (as ``local_corpus`` gives it)."""
    root = tmp_path_factory.mktemp("rebuild")
    with importlib.resources.as_file(importlib.resources.files("clcg_pipeline.corpus") / "demo_data") as src:
        shutil.copytree(src, root / "corpus")
    reconstruct_release(release, root / "rebuilt", source=str(root / "corpus"))
    return root / "rebuilt"


def test_every_section_re_derived_from_the_rebuilt_folder_equals_the_study(
    demo_study: DemoStudy, rebuilt: Path
) -> None:
    original = json.loads((demo_study.data_dir / "study_results.json").read_text(encoding="utf-8"))
    derived = as_written(derive_study_results(str(rebuilt), load_config(rebuilt / "config")).results)
    assert {*SECTIONS} <= set(original) and set(derived) == set(original)
    assert leaf_differences(original, derived) == []
    taken = sections_from_documents(str(rebuilt))
    assert set(taken) == set(TAKEN_FROM_DOCUMENTS)
    assert all(TAKEN_FROM_DOCUMENTS[key] in reason for key, reason in taken.items())
    # Only the documented run metadata differs when nothing is ignored (or nothing at all, when
    # both computations fell in the same second).
    for line in leaf_differences(original, derived, ignore=()):
        assert line.split(":")[0] in RUN_METADATA or line.startswith(
            tuple(f"{key}." for key in RUN_METADATA)
        ), line


def test_the_studies_sections_are_recomputed_from_the_tables_not_read_back(
    demo_study: DemoStudy, rebuilt: Path, tmp_path: Path
) -> None:
    """The rebuilt folder's own *_results.json documents are tampered with: a re-derivation that
    read them back (all it did before) would carry the tampering into every section."""
    folder = tmp_path / "rebuilt"
    shutil.copytree(rebuilt, folder)
    for key, asset in STUDY_SECTIONS.items():
        if key not in TAKEN_FROM_DOCUMENTS:
            (folder / f"{asset}.json").write_text(json.dumps({"status": "tampered"}), encoding="utf-8")
    original = json.loads((demo_study.data_dir / "study_results.json").read_text(encoding="utf-8"))
    derived = as_written(derive_study_results(str(folder), load_config(folder / "config")).results)
    assert leaf_differences(original, derived) == []


def test_on_the_studys_own_folder_every_section_is_its_assets_document(demo_study: DemoStudy) -> None:
    """The study's own folder has every input (the annotators' seconds too): all three sections are
    recomputed by the functions their assets run, and equal the documents those assets wrote."""
    data = demo_study.data_dir
    assert sections_from_documents(str(data)) == {}
    derived = derive_sections(str(data), load_config(demo_study.config_dir))
    assert list(derived) == list(STUDY_SECTIONS)
    for key, asset in STUDY_SECTIONS.items():
        assert leaf_differences(read_json(data / f"{asset}.json"), derived[key]) == [], key


def test_the_comparison_names_a_changed_leaf_in_each_section(demo_study: DemoStudy) -> None:
    """The comparator itself: a leaf changed anywhere is named by its path, the metadata is not."""
    original = json.loads((demo_study.data_dir / "study_results.json").read_text(encoding="utf-8"))
    changed = copy.deepcopy(original)
    changed["settings"]["generated_at"] = "2000-01-01T00:00:00+00:00"
    changed["human_validation"]["status"] = "tampered"
    language, entries = next((k, v) for k, v in changed["drilldown"].items() if v)
    entries[0]["model"] = "another"
    assert leaf_differences(original, changed) == [
        f"drilldown.{language}[0].model: {original['drilldown'][language][0]['model']!r} vs 'another'",
        f"human_validation.status: {original['human_validation']['status']!r} vs 'tampered'",
    ]


def test_reconstruct_verify_says_equal_or_names_each_leaf(
    release: Path, rebuilt: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(release=str(release), out=str(tmp_path / "again"), source=None, verify=True)
    args.source = str(rebuilt.parent / "corpus")
    assert reconstruct_command(args) == 0
    out = capsys.readouterr().out
    assert "verified: study_results.json re-derived from" in out
    # The section the rebuilt tables cannot give is named, with the input the release left out.
    assert "note: human_validation: taken from the released document: human_annotations.seconds" in out
    assert "every section but human_validation" in out and "next:" not in out
    # A rebuilt document that no longer says what its tables give is refused, leaf by leaf.
    document = tmp_path / "again" / "study_results.json"
    results = json.loads(document.read_text(encoding="utf-8"))
    results["h1"]["h1_micro"]["estimate"] += 0.5
    # Another checkout is run metadata, not a difference, but is said beside one.
    results["settings"]["code_version"] = {"git_commit": "another", "package": "0"}
    document.write_text(json.dumps(results), encoding="utf-8")
    assert verify_rebuilt(tmp_path / "again") == 1
    err = capsys.readouterr().err
    assert "differs: h1.h1_micro.estimate:" in err and "1 leaf/leaves of study_results.json differ" in err
    assert "note: the study was computed by {'git_commit': 'another'" in err


def test_a_language_without_a_corpus_version_is_said_the_same_way_in_both_lists(
    rebuilt: Path, tmp_path: Path, edit_yaml: Callable[[Path, Callable[[dict], None]], None]
) -> None:
    """`clcg estimate --full` on a data folder gives the study's document: the results layer's
    reason (the suite's bare "no scored rows" never reaches it when the folder says why: here
    the corpus has no text in that language), the versions left out, the drill-down, the studies."""
    from clcg_pipeline.cli import main

    config = tmp_path / "config"
    shutil.copytree(rebuilt / "config", config)
    demo = {lang["iso"] for lang in _languages(config)}
    extra = next(lang for lang in _languages(DEFAULT_CONFIG) if lang["iso"] not in demo)
    edit_yaml(config / "languages.yaml", lambda doc: doc["languages"].append(extra))
    out = tmp_path / "results.json"
    args = ["estimate", "--full", "--config", str(config), "--scores", str(rebuilt), "--out", str(out)]
    assert main(args) == 0
    results = json.loads(out.read_text(encoding="utf-8"))
    reason = "no corpus version (the source has no text in this language)"
    assert [(e["iso"], e["reason"]) for e in results["languages_without_data"]] == [(extra["iso"], reason)]
    assert results["settings"]["languages_without_data"] == results["languages_without_data"]
    study = json.loads((rebuilt / "study_results.json").read_text(encoding="utf-8"))
    assert results["excluded_versions"] == study["excluded_versions"]
    for key in ("drilldown", *STUDY_SECTIONS):
        assert results[key], key


def _languages(config_dir: Path) -> list[dict]:
    import yaml

    return yaml.safe_load((config_dir / "languages.yaml").read_text(encoding="utf-8"))["languages"]
