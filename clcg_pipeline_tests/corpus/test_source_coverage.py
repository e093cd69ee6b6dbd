"""``source_coverage``: the panel languages a source has files for, from file names only."""

from __future__ import annotations

import types
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.config import LanguagesConfig, SourceSpec
from clcg_pipeline.corpus import source_coverage
from clcg_pipeline.corpus.assets import _refuse_unpartitioned


def _touch(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}\n")


def test_jsonl_folder_covers_its_article_files_not_the_item_bank(
    tmp_path: Path, languages: LanguagesConfig
) -> None:
    _touch(tmp_path, "articles/en.jsonl", "articles/pt.jsonl", "articles/sw.jsonl", "items.jsonl")
    coverage = source_coverage(SourceSpec(name="s", kind="jsonl", path=str(tmp_path)), languages)
    assert coverage.covered == ("en", "pt", "sw")
    assert set(coverage.uncovered) == set(languages.isos) - {"en", "pt", "sw"}


def test_flat_jsonl_folder_skips_items_jsonl(tmp_path: Path, languages: LanguagesConfig) -> None:
    _touch(tmp_path, "en.jsonl", "mt.jsonl", "items.jsonl")
    coverage = source_coverage(SourceSpec(name="s", kind="jsonl", path=str(tmp_path)), languages)
    assert coverage.covered == ("en", "mt")


def test_flores200_files_map_through_flores_code(tmp_path: Path, languages: LanguagesConfig) -> None:
    _touch(tmp_path, "devtest/eng_Latn.devtest", "devtest/por_Latn.devtest", "dev/isl_Latn.dev")
    coverage = source_coverage(SourceSpec(name="f", kind="flores", path=str(tmp_path)), languages)
    assert coverage.covered == ("en", "pt", "is")


def test_belebele_files_map_through_flores_code(tmp_path: Path, languages: LanguagesConfig) -> None:
    _touch(tmp_path, "eng_Latn.jsonl", "swh_Latn.jsonl", "zzz_Latn.jsonl")  # zzz: outside the panel
    coverage = source_coverage(SourceSpec(name="b", kind="belebele", path=str(tmp_path)), languages)
    assert coverage.covered == ("en", "sw")
    assert "zzz_Latn" not in coverage.uncovered


def test_a_language_file_added_later_is_covered_on_the_next_call(
    tmp_path: Path, languages: LanguagesConfig
) -> None:
    source = SourceSpec(name="s", kind="jsonl", path=str(tmp_path))
    _touch(tmp_path, "articles/en.jsonl")
    assert "eu" in source_coverage(source, languages).uncovered
    _touch(tmp_path, "articles/eu.jsonl")
    assert "eu" in source_coverage(source, languages).covered


def test_unlistable_source_leaves_the_whole_panel_to_the_loader(
    tmp_path: Path, languages: LanguagesConfig
) -> None:
    coverage = source_coverage(SourceSpec(name="s", kind="jsonl", path=str(tmp_path / "missing")), languages)
    assert coverage.covered == tuple(languages.isos)
    assert coverage.uncovered == ()


def test_demo_covers_exactly_its_bundled_article_files(languages: LanguagesConfig) -> None:
    import clcg_pipeline.corpus as corpus

    bundled = {p.stem for p in (Path(corpus.__file__).parent / "demo_data" / "articles").glob("*.jsonl")}
    coverage = source_coverage(SourceSpec(name="demo", kind="demo"), languages)
    assert set(coverage.covered) == bundled
    assert len(coverage.uncovered) == len(languages.isos) - len(bundled) > 0


def test_flores_plus_files_under_their_split(tmp_path: Path, languages: LanguagesConfig) -> None:
    _touch(tmp_path, "devtest/eng_Latn.parquet", "devtest/sub/mlt_Latn.parquet")
    coverage = source_coverage(SourceSpec(name="f", kind="flores", path=str(tmp_path)), languages)
    assert coverage.covered == ("en", "mt")


# Names the loaders cannot go by (they read each version's language from its records): files
# not named by language, or names that miss the reference language.
UNTRUSTED_NAMES = [
    ("jsonl", ("articles/en.jsonl", "articles/part-2.jsonl")),
    ("flores", ("devtest/train-00000-of-00001.parquet",)),
    ("jsonl", ("articles/pt.jsonl", "articles/ka.jsonl")),
]


@pytest.mark.parametrize(("kind", "files"), UNTRUSTED_NAMES, ids=["not-languages", "shard", "no-reference"])
def test_names_that_cannot_tell_leave_the_whole_panel_to_the_loader(
    kind: str, files: tuple[str, ...], tmp_path: Path, languages: LanguagesConfig
) -> None:
    _touch(tmp_path, *files)
    coverage = source_coverage(SourceSpec(name="s", kind=kind, path=str(tmp_path)), languages)  # type: ignore[arg-type]
    assert coverage.covered == tuple(languages.isos)


def test_records_of_a_language_without_a_partition_are_refused() -> None:
    tables = types.SimpleNamespace(articles=pd.DataFrame({"language": ["en", "pt", "ka"]}))
    source = SourceSpec(name="mixed", kind="jsonl", path="/corpus")
    with pytest.raises(dg.Failure, match=r"source 'mixed' has records in ka, pt but no file named"):
        _refuse_unpartitioned(tables, ["en"], source)  # type: ignore[arg-type]
    _refuse_unpartitioned(tables, ["en", "pt", "ka"], source)  # type: ignore[arg-type]
