"""`clcg plan` says in words that the long (document-bearing) task prompts dominate the input tokens."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from clcg_pipeline.orchestration._plan import plan_granularity

EditYaml = Callable[[Path, Callable[[dict], None]], None]


def _english_and_portuguese(config_dir: Path, edit_yaml: EditYaml) -> None:
    edit_yaml(
        config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[x for x in doc["languages"] if x["iso"] in ("en", "pt")]),
    )


@pytest.mark.filterwarnings("ignore:languages not in the panel were dropped")
def test_plan_notes_that_long_prompts_dominate(config_dir: Path, edit_yaml: EditYaml, tmp_path: Path) -> None:
    _english_and_portuguese(config_dir, edit_yaml)
    edit_yaml(
        config_dir / "study.yaml",
        lambda doc: doc["granularity"].update(
            buckets=[{"name": "1K-2K", "min_tokens": 1000, "max_tokens": 2000, "documents": 1}]
        ),
    )
    plan, notes = plan_granularity(config_dir=str(config_dir), data_dir=str(tmp_path / "data"))
    assert plan is not None
    rows = plan[plan["model"] != "TOTAL"]
    full = int(rows.loc[rows["context"] == "full", "input_tokens"].sum())
    share = full / int(rows["input_tokens"].sum())
    assert share > 0.5
    [note] = [n for n in notes if n.startswith("long prompts dominate")]
    assert f"{share:.0%}" in note and f"{int(rows['input_tokens'].sum()):,}" in note


@pytest.mark.filterwarnings("ignore:languages not in the panel were dropped")
def test_plan_says_a_hosted_word_writer_is_not_counted_and_uses_an_offline_one(
    config_dir: Path, edit_yaml: EditYaml, tmp_path: Path
) -> None:
    _english_and_portuguese(config_dir, edit_yaml)
    hosted = {
        "id": "hosted-writer",
        "provider": "openai",
        "model": "gpt-4o-mini",
        "api_key_env": "CLCG_TEST_WRITER_KEY",
        "evaluated": False,
    }
    edit_yaml(config_dir / "models.yaml", lambda doc: doc["models"].append(hosted))
    buckets = [{"name": "1K-2K", "min_tokens": 1000, "max_tokens": 2000, "documents": 1}]

    def notes_with(writer: str) -> list[str]:
        edit_yaml(
            config_dir / "study.yaml",
            lambda doc: doc["granularity"].update(buckets=buckets, word_question_writer=writer),
        )
        plan, notes = plan_granularity(config_dir=str(config_dir), data_dir=str(tmp_path / writer))
        assert plan is not None and plan["task"].isin(["word_single_qa", "word_multi_qa"]).any()
        return [n for n in notes if n.startswith("word tasks")]

    [note] = notes_with("hosted-writer")
    assert "hosted-writer writes them (paid calls, not counted here)" in note
    assert notes_with("offline-writer") == []
