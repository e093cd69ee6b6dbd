"""An empty item bank (or one with nothing in the primary band) is said where it is made."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.config import StudyConfig, load_config
from clcg_pipeline.corpus.assets import build_corpus_defs
from clcg_pipeline.items import item_bank_status
from clcg_pipeline.items.assets import build_items_defs
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import ParquetIOManager, empty_frame
from clcg_pipeline_tests.conftest import materialize

FIXTURES = Path(__file__).resolve().parents[1] / "corpus" / "fixtures"


def _items(*pairs: tuple[str, str]) -> pd.DataFrame:
    frame = pd.DataFrame({"item_source": [s for s, _ in pairs], "level": [lvl for _, lvl in pairs]})
    return frame


def test_no_items_and_no_generator_says_what_to_configure() -> None:
    status = item_bank_status(
        empty_frame("items"),
        source="flores",
        source_kind="flores",
        n_source_items=0,
        n_sampled_articles=3,
        n_rejected=0,
        study=StudyConfig(),
    )
    assert not status.ok
    assert status.status.startswith("empty: source 'flores' (flores) has no items")
    assert (
        "study.item_generator" in status.status
        and "Every prediction and score will be empty" in status.status
    )


def test_all_generated_items_rejected_points_at_rejections() -> None:
    status = item_bank_status(
        empty_frame("items"),
        source="demo",
        source_kind="demo",
        n_source_items=0,
        n_sampled_articles=2,
        n_rejected=7,
        study=StudyConfig(item_generator="gen"),
    )
    assert not status.ok and "all 7 item(s) from gen failed validation" in status.status


def test_items_outside_the_primary_band_are_not_ok() -> None:
    status = item_bank_status(
        _items(("belebele", "MC"), ("belebele", "MC")),
        source="bb",
        source_kind="belebele",
        n_source_items=2,
        n_sampled_articles=1,
        n_rejected=0,
        study=StudyConfig(),
    )
    assert not status.ok and status.n_items == 2 and status.n_in_band == 0
    assert "no item in the primary band" in status.status and "belebele/MC" in status.status


def test_items_in_band_are_ok() -> None:
    status = item_bank_status(
        _items(("llm", "L3"), ("llm", "L0"), ("human", "H")),
        source="demo",
        source_kind="demo",
        n_source_items=3,
        n_sampled_articles=1,
        n_rejected=0,
        study=StudyConfig(),
    )
    assert status.ok and status.n_in_band == 1 and status.status.startswith("ok: 3 item(s), 1 in")


@pytest.mark.filterwarnings("ignore::clcg_pipeline.corpus.CorpusWarning")
def test_flores_primary_without_generator_warns_on_items(
    tmp_path: Path, config_dir: Path, edit_yaml: Callable
) -> None:
    shutil.copytree(FIXTURES / "flores200", tmp_path / "flores")
    edit_yaml(
        config_dir / "sources.yaml",
        lambda doc: doc.update(
            sources=[{"name": "flores", "kind": "flores", "path": str(tmp_path / "flores"), "split": "dev"}]
        ),
    )
    edit_yaml(
        config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[x for x in doc["languages"] if x["iso"] in ("en", "pt", "sw")]),
    )
    config = load_config(config_dir)
    data = tmp_path / "data"
    resources = {
        "study": StudyResource(config_dir=str(config_dir), data_dir=str(data)),
        "io_manager": ParquetIOManager(base_path=str(data)),
    }
    corpus_defs = build_corpus_defs(config)
    corpus = [a for a in corpus_defs.assets if isinstance(a, dg.AssetsDefinition)]
    items_defs = [a for a in build_items_defs(config).assets if isinstance(a, dg.AssetsDefinition)]
    by_name = {a.node_def.name: a for a in [*corpus, *items_defs]}
    with dg.DagsterInstance.ephemeral() as instance:
        assert materialize(
            [by_name["corpus"]], partition_key="en", resources=resources, instance=instance
        ).success
        result = materialize(
            [by_name["corpus"], by_name["study_sample"], by_name["item_bank"]],
            selection=[by_name["study_sample"], by_name["item_bank"]],
            resources=resources,
            instance=instance,
        )
    assert result.success
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "item_bank_not_empty" and not check.passed
    assert check.severity == dg.AssetCheckSeverity.WARN
    assert "study.item_generator" in (check.description or "")
    (items_event,) = [
        m for m in result.get_asset_materialization_events() if m.asset_key == dg.AssetKey("items")
    ]
    status = items_event.materialization.metadata["status"].value
    assert isinstance(status, str) and status.startswith("empty: source 'flores' (flores) has no items")
