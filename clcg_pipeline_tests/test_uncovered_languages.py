"""A panel language the corpus source does not cover must not look materialized and healthy.

``quy`` has no file in the bundled demo corpus. What the Dagster UI's partitions view shows is
``instance.get_materialized_partitions``; the uncovered language must be absent there while the
covered one is present, and a second run must still be "everything is up to date".
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from clcg_pipeline.config import load_config
from clcg_pipeline.corpus import source_coverage, study_coverage
from clcg_pipeline.orchestration import StudyRunError, run_study
from clcg_pipeline.partitions import response_key
from clcg_pipeline_tests.conftest import DEFAULT_CONFIG, SmallStudy

pytestmark = pytest.mark.slow

COVERED, UNCOVERED = "en", "quy"
MODEL = "lexical-reader"
CORPUS_PARTITIONED = ("paragraphs",)
RESPONSE_PARTITIONED = ("predictions", "scores")
WATCHED = (*CORPUS_PARTITIONED, *RESPONSE_PARTITIONED)


def _add_uncovered_language(config_dir: Path) -> None:
    """Put ``UNCOVERED`` (as the default config spells it) into ``config_dir``'s panel."""
    default = yaml.safe_load((DEFAULT_CONFIG / "languages.yaml").read_text(encoding="utf-8"))
    (entry,) = [lang for lang in default["languages"] if lang["iso"] == UNCOVERED]
    path = config_dir / "languages.yaml"
    panel = yaml.safe_load(path.read_text(encoding="utf-8"))
    panel["languages"].append(entry)
    path.write_text(yaml.safe_dump(panel, sort_keys=False, allow_unicode=True), encoding="utf-8")


@pytest.fixture(scope="module")
def story(small_study: SmallStudy, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    # The small study (en and pt, the lexical reader), copied with its instance, instead of a study
    # of this module's own; the uncovered language joins its panel, so the first run is the first
    # to meet it (the panel changed: today it builds the covered language's partitions again).
    root = small_study.copy_to(tmp_path_factory.mktemp("uncovered"))
    config_dir = root / "config"
    _add_uncovered_language(config_dir)
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(root / "dagster_home"))

    def run() -> Any:
        return run_study(
            config_dir=str(config_dir),
            data_dir=str(root / "data"),
            models=[MODEL],
            languages=[COVERED, UNCOVERED],
        )

    try:
        first = run()
        second = run()
        with dg.DagsterInstance.get() as instance:
            materialized = {name: instance.get_materialized_partitions(dg.AssetKey(name)) for name in WATCHED}
        yield {"config_dir": config_dir, "first": first, "second": second, "materialized": materialized}
    finally:
        mp.undo()


def test_the_demo_source_does_not_cover_the_uncovered_language(story: dict[str, Any]) -> None:
    config = load_config(story["config_dir"])
    coverage = source_coverage(config.sources.primary, config.languages)
    assert COVERED in coverage.covered and UNCOVERED in coverage.uncovered


def test_covered_language_is_materialized(story: dict[str, Any]) -> None:
    assert COVERED in story["materialized"]["paragraphs"]
    for name in RESPONSE_PARTITIONED:
        assert str(response_key(COVERED, MODEL)) in story["materialized"][name], name


def test_uncovered_language_has_no_materialized_partition(story: dict[str, Any]) -> None:
    assert UNCOVERED not in story["materialized"]["paragraphs"]
    for name in RESPONSE_PARTITIONED:
        assert str(response_key(UNCOVERED, MODEL)) not in story["materialized"][name], name


def test_second_run_is_everything_up_to_date(story: dict[str, Any]) -> None:
    assert story["first"].runs > 0
    assert story["second"].runs == 0


def test_the_run_says_which_languages_it_left_out(story: dict[str, Any]) -> None:
    assert story["first"].uncovered_languages == [UNCOVERED]
    assert story["second"].uncovered_languages == [UNCOVERED]


def test_only_uncovered_languages_is_refused_before_anything_runs(
    story: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(StudyRunError, match=r"no source has a file for quy: the corpus source 'demo'"):
        run_study(
            config_dir=str(story["config_dir"]),
            data_dir=str(tmp_path / "data"),
            models=[MODEL],
            languages=[UNCOVERED],
        )
    assert not (tmp_path / "data").exists()


def test_a_long_document_corpus_covers_its_own_languages(story: dict[str, Any], tmp_path: Path) -> None:
    config = load_config(story["config_dir"])
    long_documents = tmp_path / "long" / "articles"
    long_documents.mkdir(parents=True)
    (long_documents / f"{UNCOVERED}.jsonl").write_text("{}\n")
    long_source = {"enabled": True, "source": str(tmp_path / "long")}
    granularity = config.study.granularity.model_copy(update=long_source)
    study = config.study.model_copy(update={"granularity": granularity})
    coverage = study_coverage(config.model_copy(update={"study": study}))
    assert UNCOVERED in coverage.covered and COVERED in coverage.covered
