from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest

from clcg_pipeline.config import ConfigError, load_config
from clcg_pipeline_tests.conftest import DEFAULT_CONFIG


def test_default_config_is_the_study_panel() -> None:
    config = load_config(DEFAULT_CONFIG)
    assert config.languages.reference == "en"
    assert config.languages.baseline == "pt"
    assert len(config.languages.targets) == 16
    assert config.languages.get("quy").joshi_class is None
    assert config.languages.get("quy").joshi_class_sensitivity == 1
    assert {lang.iso for lang in config.languages.languages if lang.non_latin} == {"ka", "ne", "am"}
    assert config.study.conditions["closed_book"].seed == 20260322
    assert len(config.config_hash) == 64


def test_config_hash_changes_with_any_file(config_dir: Path) -> None:
    before = load_config(config_dir).config_hash
    (config_dir / "study.yaml").write_text(
        (config_dir / "study.yaml").read_text() + "\n# a comment\n", encoding="utf-8"
    )
    assert load_config(config_dir).config_hash != before


def test_error_names_file_and_field(config_dir: Path, edit_yaml: Callable) -> None:
    def bad_class(doc: dict) -> None:
        doc["languages"][3]["joshi_class"] = 9

    edit_yaml(config_dir / "languages.yaml", bad_class)
    with pytest.raises(ConfigError) as raised:
        load_config(config_dir)
    message = str(raised.value)
    assert "languages.yaml" in message
    assert "languages[3] (mt).joshi_class" in message


def test_unknown_key_is_rejected(config_dir: Path, edit_yaml: Callable) -> None:
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(bootstrap_replicate=10))
    with pytest.raises(ConfigError, match=r"study\.yaml[\s\S]*bootstrap_replicate: Extra inputs"):
        load_config(config_dir)


def test_hosted_model_needs_key_variable_name(config_dir: Path, edit_yaml: Callable) -> None:
    edit_yaml(
        config_dir / "models.yaml",
        lambda doc: doc["models"].append({"id": "gpt", "provider": "openai", "model": "gpt-4o"}),
    )
    with pytest.raises(ConfigError, match=r"models\.yaml[\s\S]*models\[\d+\] \(gpt\)[\s\S]*api_key_env"):
        load_config(config_dir)


def test_compatible_provider_needs_base_url(config_dir: Path, edit_yaml: Callable) -> None:
    edit_yaml(
        config_dir / "models.yaml",
        lambda doc: doc["models"].append({"id": "local", "provider": "openai_compatible", "model": "llama"}),
    )
    with pytest.raises(ConfigError, match="base_url"):
        load_config(config_dir)


def test_model_id_must_be_a_partition_key(config_dir: Path, edit_yaml: Callable) -> None:
    edit_yaml(config_dir / "models.yaml", lambda doc: doc["models"][0].update(id="a|b"))
    with pytest.raises(ConfigError, match="model id"):
        load_config(config_dir)


def test_two_references_rejected(config_dir: Path, edit_yaml: Callable) -> None:
    edit_yaml(config_dir / "languages.yaml", lambda doc: doc["languages"][1].update(role="reference"))
    with pytest.raises(ConfigError, match="exactly one language must have role 'reference'"):
        load_config(config_dir)


def test_item_generator_must_be_a_model(config_dir: Path, edit_yaml: Callable) -> None:
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(item_generator="nope"))
    with pytest.raises(ConfigError, match="item_generator 'nope'"):
        load_config(config_dir)


def test_level_auditor_must_be_a_model(config_dir: Path, edit_yaml: Callable) -> None:
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(level_auditor="judge"))
    with pytest.raises(ConfigError, match="level_auditor 'judge' is not a model id"):
        load_config(config_dir)


def test_missing_file_and_bad_yaml(config_dir: Path) -> None:
    (config_dir / "sources.yaml").unlink()
    with pytest.raises(ConfigError, match=r"sources\.yaml: file not found"):
        load_config(config_dir)
    (config_dir / "sources.yaml").write_text("sources: [unclosed", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(config_dir)
    with pytest.raises(ConfigError, match="config folder not found"):
        load_config(config_dir / "nowhere")


def test_min_articles_defaults_to_ten_and_is_validated(config_dir: Path, edit_yaml: Callable) -> None:
    assert load_config(config_dir).study.min_articles == 10
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(min_articles=25))
    assert load_config(config_dir).study.min_articles == 25
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(min_articles=0))
    with pytest.raises(ConfigError, match=r"study\.yaml[\s\S]*min_articles"):
        load_config(config_dir)


def test_semsim_off_by_default_and_true_means_minilm(
    config_dir: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_config(config_dir).study.semsim_model is None
    # Pretend the extra is installed: this test is about the setting, not the environment.
    monkeypatch.setattr("clcg_pipeline.config._load.importlib.util.find_spec", lambda name: object())
    for value, expected in ((True, "minilm"), ("minilm", "minilm"), (False, None), (None, None)):
        edit_yaml(config_dir / "study.yaml", lambda doc, v=value: doc.update(semsim=v))
        assert load_config(config_dir).study.semsim_model == expected
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(semsim="mpnet"))
    with pytest.raises(ConfigError, match=r"study\.yaml[\s\S]*semsim"):
        load_config(config_dir)


def test_semsim_without_the_extra_is_refused(
    config_dir: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_find_spec = importlib.util.find_spec

    def no_torch(name: str, *args: object) -> object:
        return None if name == "torch" else real_find_spec(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr("clcg_pipeline.config._load.importlib.util.find_spec", no_torch)
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(semsim="minilm"))
    with pytest.raises(
        ConfigError, match=r"study\.yaml: semsim .*not installed \(missing: .*torch.*setup-semsim"
    ):
        load_config(config_dir)


def test_replication_role_is_refused_with_a_pointer(config_dir: Path, edit_yaml: Callable) -> None:
    def add_replication(doc: dict) -> None:
        doc["sources"].append(
            {
                "name": "flores",
                "kind": "flores",
                "path": "/data/flores",
                "split": "dev",
                "role": "replication",
            }
        )

    edit_yaml(config_dir / "sources.yaml", add_replication)
    with pytest.raises(ConfigError) as raised:
        load_config(config_dir)
    message = str(raised.value)
    assert "sources.yaml" in message
    assert "sources[1] (flores).role" in message
    assert "study.replication_scores" in message


def test_second_source_is_refused(config_dir: Path, edit_yaml: Callable) -> None:
    edit_yaml(
        config_dir / "sources.yaml",
        lambda doc: doc["sources"].append(
            {"name": "other", "kind": "jsonl", "path": "/x", "role": "primary"}
        ),
    )
    with pytest.raises(ConfigError, match=r"exactly one source[\s\S]*'demo', 'other'"):
        load_config(config_dir)


def test_study_roles_must_name_models_and_one_model_is_evaluated(
    config_dir: Path, edit_yaml: Callable
) -> None:
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(error_taxonomy={"judges": ["ghost"]}))
    with pytest.raises(ConfigError, match=r"error_taxonomy\.judges 'ghost' is not a model id"):
        load_config(config_dir)
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(error_taxonomy={"judges": []}))

    def only_auxiliary(doc: dict) -> None:
        for model in doc["models"]:
            model["evaluated"] = False

    edit_yaml(config_dir / "models.yaml", only_auxiliary)
    with pytest.raises(ConfigError, match="no model has evaluated: true"):
        load_config(config_dir)


def test_auxiliary_models_are_not_evaluated() -> None:
    config = load_config(DEFAULT_CONFIG)
    evaluated = {m.id for m in config.models.evaluated}
    assert {"offline-judge-a", "offline-judge-b", "offline-writer"}.isdisjoint(evaluated)
    assert "lexical-reader" in evaluated
