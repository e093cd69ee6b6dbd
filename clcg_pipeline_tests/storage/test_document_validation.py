"""study_results.json and its section documents are validated against their shapes (issue 34).

A document with a key its shape does not declare, or a value of another type, is refused with
one error naming the file, the section and the field: when the analysis asset writes it, when
``clcg report`` and the report asset read it, and when ``clcg compare`` reads it.
"""

from __future__ import annotations

import functools
import json
import operator
import types
import typing
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest
from pydantic import BaseModel

from clcg_pipeline import storage
from clcg_pipeline.config import load_config
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import (
    DocumentError,
    Estimate,
    EstimateModel,
    H1Model,
    H1Results,
    ModelContrastsModel,
    ModelContrastsResults,
    StudyResults,
    StudyResultsDocument,
    TieGroups,
    TieGroupsModel,
    study_results_view,
    validate_document,
    validate_model,
)

WRONG_TYPE = {"h1": {"h1_micro": {"estimate": "0.1", "ci_low": 0.0}}, "estimands": {}}
UNKNOWN_KEY = {"h1": {"h1_mikro": {"estimate": 0.1}}, "estimands": {}}


def _refused(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(DocumentError) as raised:
        call(*args, **kwargs)
    return str(raised.value)


def test_a_wrong_type_is_refused_naming_file_section_and_field() -> None:
    message = _refused(validate_document, WRONG_TYPE, source="run/study_results.json")
    assert message.startswith("run/study_results.json: section 'h1', field h1.h1_micro.estimate:")
    assert (
        "valid number (got a string)" in message
        and "0.1" not in message
        and "StudyResultsDocument" in message
    )


SECRET = "sk-secret-9f8e7d6c5b4a"


def test_a_message_names_the_field_and_never_the_value() -> None:
    # A settings entry carrying a credential: an undeclared key holding it, and a declared
    # field of another type holding a secret-looking string; neither value may reach the message.
    document = {
        "settings": {
            "models": [{"id": "m", "provider": {"token": SECRET}}],
            "seed": SECRET,
            "sources": [{"name": "demo", "kind": "folder", "api_key": SECRET}],
        }
    }
    message = _refused(validate_document, document, source="study_results.json")
    assert "field settings.seed: Input should be a valid integer (got a string)" in message, message
    assert "settings.models[0].provider: Input should be a valid string (got an object)" in message
    assert all(part not in message for part in ("sk-", "secret", "9f8e7d", "token")), message


def test_a_message_does_not_quote_a_value_its_pydantic_message_would() -> None:
    # A validator's "Value error, ..." text may quote the input: said as a plain sentence instead.
    from pydantic import BaseModel, field_validator

    class Keyed(BaseModel):
        key: str

        @field_validator("key")
        @classmethod
        def _short(cls, value: str) -> str:
            raise ValueError(f"{value} is too long")

    message = _refused(validate_model, Keyed, {"key": SECRET}, source="keyed.json")
    assert message.startswith("keyed.json: field key: a value its field does not accept (got a string)")
    assert SECRET not in message and "secret" not in message, message


def test_an_unknown_key_is_refused_naming_it() -> None:
    message = _refused(validate_document, UNKNOWN_KEY, source="study_results.json")
    assert "section 'h1', field h1.h1_mikro: a key its shape does not declare" in message


def test_a_value_fitting_no_member_of_a_union_is_one_problem_at_its_own_field() -> None:
    # Not "definitions.h1_micro.Definition" and "definitions.h1_micro.str": the field, then what
    # each would need. (``warnings`` was the example until it became a list of strings only.)
    document = {"definitions": {"h1": "a definition", "h1_micro": 3}}
    message = _refused(validate_document, document, source="study_results.json")
    assert message.startswith(
        "study_results.json: section 'definitions', field definitions.h1_micro: Input should be a "
        "valid dictionary or Input should be a valid string (got an integer) (the shape"
    ), message


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"pairs": "12"}, "pairs: Input should be a valid integer"),  # no coercion of "12"
        ({"pairs": True}, "pairs: Input should be a valid integer"),  # nor of a bool
        ({"judges": [{"judge": "a", "authorization": "x"}]}, "judges[0].authorization: a key"),
    ],
)
def test_a_section_document_is_checked_against_its_own_shape(document: dict, field: str) -> None:
    message = _refused(validate_document, document, "error_taxonomy", source="error_taxonomy_results.json")
    assert message.startswith(f"error_taxonomy_results.json: field {field}"), message


def test_a_plain_document_as_the_producers_build_it_fits() -> None:
    # Tuples and NumPy scalars are checked as the JSON file holds them (lists, plain numbers).
    import numpy as np

    validate_document(
        {"h1": {"by_language": {"sw": {"estimate": np.float64(0.2), "n": np.int64(3)}}}, "warnings": ("w",)},
        source="study_results.json",
    )


def _analysis_asset(config_dir: Path, data_dir: Path) -> tuple[Any, StudyResource]:
    from clcg_pipeline.results.assets import build_analysis_defs

    defs = build_analysis_defs(load_config(config_dir))
    (asset,) = defs.assets
    return asset, StudyResource(config_dir=str(config_dir), data_dir=str(data_dir))


def test_the_analysis_asset_refuses_a_bad_section_before_any_work(config_dir: Path, tmp_path: Path) -> None:
    asset, study = _analysis_asset(config_dir, tmp_path / "data")
    with dg.instance_for_test() as instance:
        context = dg.build_asset_context(instance=instance)
        message = _refused(
            asset,
            context,
            study=study,
            articles=pd.DataFrame(),
            tokenizer_fertility_by_language=pd.DataFrame(),
            error_taxonomy_results={"status": "ok", "pairz": 3},
            human_validation_results={"status": "skipped"},
            granularity_results={"status": "skipped"},
        )
    assert message.startswith(f"{tmp_path / 'data' / 'error_taxonomy_results.json'}: field pairz: a key")
    assert not (tmp_path / "data").exists()  # nothing read, nothing written


def test_the_analysis_asset_refuses_a_bad_document_before_writing(
    config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clcg_pipeline.results import assets as results_assets

    assembled = types.SimpleNamespace(
        study=types.SimpleNamespace(results=dict(WRONG_TYPE), estimates=pd.DataFrame()),
        rows=0,
        excluded=0,
        pairs=pd.DataFrame(),
    )
    monkeypatch.setattr(results_assets, "assemble_study_results", lambda *a, **k: assembled)
    monkeypatch.setattr(results_assets, "analysis_times", lambda *a, **k: [])
    asset, study = _analysis_asset(config_dir, tmp_path / "data")
    with dg.instance_for_test() as instance:
        message = _refused(
            asset,
            dg.build_asset_context(instance=instance),
            study=study,
            articles=pd.DataFrame(),
            tokenizer_fertility_by_language=pd.DataFrame(),
            error_taxonomy_results={"status": "skipped"},
            human_validation_results={"status": "skipped"},
            granularity_results={"status": "skipped"},
        )
    assert "study_results.json: section 'h1', field h1.h1_micro.estimate" in message
    assert not list((tmp_path / "data").rglob("leaderboard*"))  # refused before the leaderboard


def test_a_study_asset_refuses_its_bad_document_before_writing(
    config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clcg_pipeline.validation.taxonomy import assets as taxonomy_assets

    document = {"status": "ok", "pairs": "20", "reason": None}
    bad = types.SimpleNamespace(results=document, estimates=pd.DataFrame())
    monkeypatch.setattr(taxonomy_assets, "error_taxonomy_from_tables", lambda *a, **k: bad)
    (asset,) = taxonomy_assets.build_error_taxonomy_analysis_defs(load_config(config_dir)).assets or []
    study = StudyResource(config_dir=str(config_dir), data_dir=str(tmp_path))
    with dg.instance_for_test() as instance:
        context = dg.build_asset_context(instance=instance)
        message = _refused(lambda: list(asset(context, study=study)))  # type: ignore[operator]
    path = tmp_path / "error_taxonomy_results.json"
    assert message.startswith(f"{path}: field pairs: Input should be a valid integer (got a string)")
    assert not path.exists()


def test_clcg_report_refuses_a_bad_document_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from clcg_pipeline.cli import main
    from clcg_pipeline.storage import partition_dir, write_frame

    data = tmp_path / "data"
    data.mkdir()
    (data / "study_results.json").write_text(json.dumps(UNKNOWN_KEY), encoding="utf-8")
    write_frame(
        partition_dir(str(data), "estimates", None) / "data.parquet",
        pd.DataFrame({"estimand": ["h1_micro"], "estimate": [0.1]}),
    )
    assert main(["report", "--data", str(data)]) == 1
    err = capsys.readouterr().err
    assert f"{data / 'study_results.json'}: section 'h1', field h1.h1_mikro" in " ".join(err.split())
    assert not (data / "report.html").exists()


def test_the_report_asset_refuses_a_bad_document(config_dir: Path, tmp_path: Path) -> None:
    from clcg_pipeline.report.assets import report

    study = StudyResource(config_dir=str(config_dir), data_dir=str(tmp_path))
    with dg.instance_for_test() as instance:
        context = dg.build_asset_context(instance=instance)
        message = _refused(report, context, study=study, study_results=WRONG_TYPE, estimates=pd.DataFrame())
    assert message.startswith(f"{tmp_path / 'study_results.json'}: section 'h1', field h1.h1_micro.estimate")
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("document", [WRONG_TYPE, UNKNOWN_KEY])
def test_compare_refuses_a_bad_document(tmp_path: Path, document: dict) -> None:
    from clcg_pipeline.results import load_run

    path = tmp_path / "study_results.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    for target in (path, tmp_path):  # the file itself, and a folder holding it
        message = _refused(load_run, target)
        assert message.startswith(f"{path}: section 'h1', field h1.h1_mi"), message


# ---------------------------------------------------------------------------------------------
# The typed views hold to the shapes they read


VIEWS: dict[type[BaseModel], Any] = {
    EstimateModel: Estimate,
    H1Model: H1Results,
    TieGroupsModel: TieGroups,
    ModelContrastsModel: ModelContrastsResults,
    StudyResults: StudyResultsDocument,
}
# The views the report's sections read (report/*.py), each held to its shape the same way.
VIEWS |= {
    storage.NewModelView: storage.NewModel,
    storage.ErrorTaxonomyView: storage.ErrorTaxonomyResults,
    storage.QcStepView: storage.QcStep,
    storage.AlphaRowView: storage.AlphaRow,
    storage.MixedPreferenceView: storage.PreferenceModel,
    storage.PreferenceBootstrapView: storage.PreferenceBootstrap,
    storage.PreferenceView: storage.Preference,
    storage.CeilingView: storage.Ceiling,
    storage.HumanValidationView: storage.HumanValidationResults,
    storage.GranularityView: storage.GranularityResults,
    storage.DrilldownItemView: storage.DrilldownItem,
    storage.PairsTableView: storage.PairsTable,
    storage.CurvePointView: storage.CurvePoint,
    storage.HeatmapCellView: storage.HeatmapCell,
    storage.TransitionView: storage.LabelTransition,
    storage.LabelFrequencyView: storage.LabelFrequency,
    storage.CrosslingualLossView: storage.CrosslingualLoss,
    storage.ParagraphJudgeAgreementView: storage.ParagraphJudgeAgreement,
    storage.HumanJudgeCorrelationView: storage.HumanJudgeCorrelation,
    storage.DefinitionView: storage.Definition,
    storage.MetricSensitivityView: storage.MetricSensitivity,
    storage.MetricSensitivityEntryView: storage.MetricSensitivityEntry,
}


def _as_shape(hint: Any) -> Any:
    """``hint`` with every view replaced by the shape it reads."""
    if isinstance(hint, type) and hint in VIEWS:
        return VIEWS[hint]
    args = typing.get_args(hint)
    if not args:
        return hint
    mapped = tuple(_as_shape(a) for a in args)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, mapped)
    return origin[mapped]


# A section model that is its own shape (``_validity_sections``) has nothing to compare.
@pytest.mark.parametrize("view", [v for v in VIEWS if VIEWS[v] is not v], ids=lambda v: v.__name__)
def test_every_view_field_is_its_shape_field(view: type[BaseModel]) -> None:
    shape = typing.get_type_hints(VIEWS[view])
    for name, field in view.model_fields.items():
        assert name in shape, f"{view.__name__}.{name} is not a key of {VIEWS[view].__name__}"
        assert _as_shape(field.annotation) == shape[name] | None, (view.__name__, name)
        assert field.default is None  # absent in the document: None, as ``.get`` said


def test_the_view_reads_typed_fields_and_refuses_a_wrong_type() -> None:
    doc = study_results_view(
        {"h1": {"by_model": {"m": {"h1_micro": {"estimate": 0.1, "identifiable": False}}}}, "extra": 1}
    )
    assert doc.h1 is not None and doc.h1.by_model is not None
    assert doc.h1.by_model["m"]["h1_micro"].identifiable is False and doc.model_contrasts is None
    message = _refused(study_results_view, {"model_contrasts": {"tie_groups": {"by_model": {"m": "1"}}}})
    assert "section 'model_contrasts', field model_contrasts.tie_groups.by_model.m" in message
