"""A snapshot of the graph: an accidental change to assets, groups, deps or partitions shows here."""

from pathlib import Path

import dagster as dg
import yaml

from clcg_pipeline.orchestration._definitions import build_definitions
from clcg_pipeline.orchestration._jobs import CODE_LOCATION, RESPONSE_ASSETS

LANGUAGE = "language"
GRID = "language x model"
EXPECTED_ASSETS: dict[str, tuple[str, str | None, set[str]]] = {
    # asset: (group, partitioning, upstream assets)
    "languages": ("corpus", None, set()),
    "articles": ("corpus", LANGUAGE, set()),
    "paragraphs": ("corpus", LANGUAGE, set()),
    "corpus_audit": ("corpus", LANGUAGE, set()),
    "item_translations": ("corpus", LANGUAGE, set()),
    "study_sample": ("corpus", None, {"articles"}),
    "tokenizer_fertility_by_language": ("corpus", None, {"paragraphs"}),
    "items": ("items", None, {"articles", "paragraphs", "study_sample"}),
    "item_rejections": ("items", None, {"articles", "paragraphs", "study_sample"}),
    "item_calls": ("items", None, {"articles", "paragraphs", "study_sample"}),
    "item_level_audit": ("items", None, {"items", "paragraphs"}),
    "level_audit_calls": ("items", None, {"items", "paragraphs"}),
    # one model's stream of calls, ahead of its language x model partitions (which follow it)
    "model_calls": (
        "inference",
        "model",
        {"items", "paragraphs", "study_sample", "long_paragraphs", "granularity_tasks"},
    ),
    "predictions": ("inference", GRID, {"items", "paragraphs", "study_sample", "model_calls"}),
    "calls": ("inference", GRID, {"items", "paragraphs", "study_sample", "model_calls"}),
    "scores": ("scoring", GRID, {"items", "predictions"}),
    "estimates": (
        "analysis",
        None,
        {"articles", "corpus_audit", "scores", "tokenizer_fertility_by_language"}
        | {"error_taxonomy_results", "human_validation_results", "granularity_results"},
    ),
    "study_results": (
        "analysis",
        None,
        {"articles", "corpus_audit", "scores", "tokenizer_fertility_by_language"}
        | {"error_taxonomy_results", "human_validation_results", "granularity_results"},
    ),
    "report": ("report", None, {"estimates", "study_results"}),
    "long_documents": ("granularity", None, {"paragraphs", "corpus_audit"}),
    "long_paragraphs": ("granularity", None, {"paragraphs", "corpus_audit"}),
    "granularity_tasks": ("granularity", None, {"long_documents", "long_paragraphs"}),
    "task_rejections": ("granularity", None, {"long_documents", "long_paragraphs"}),
    "task_writer_calls": ("granularity", None, {"long_documents", "long_paragraphs"}),
    **dict.fromkeys(
        ["task_predictions", "task_calls"],
        ("granularity", GRID, {"granularity_tasks", "long_paragraphs", "model_calls"}),
    ),
    **dict.fromkeys(
        ["task_scores", "task_judgements", "task_judge_calls"],
        ("granularity", GRID, {"granularity_tasks", "long_documents", "long_paragraphs", "task_predictions"}),
    ),
    **dict.fromkeys(
        ["error_taxonomy_estimates", "error_taxonomy_results"],
        ("validation", None, {"diagnostic_sample", "error_judgements", "order_bias_judgements"}),
    ),
    **dict.fromkeys(
        ["granularity_estimates", "granularity_results"],
        (
            "granularity",
            None,
            {"long_documents", "task_scores", "task_judgements", "task_calls", "task_judge_calls"}
            | {"human_annotations", "annotation_sample"},
        ),
    ),
    "diagnostic_sample": ("validation", None, {"predictions", "scores"}),
    **dict.fromkeys(
        ["error_judgements", "order_bias_judgements", "judge_calls"],
        ("validation", None, {"diagnostic_sample", "items", "paragraphs"}),
    ),
    **dict.fromkeys(
        ["human_qc", "human_validation_joins", "human_validation_estimates", "human_validation_results"],
        (
            "validation",
            None,
            {"human_annotations", "annotation_sample", "predictions", "scores", "diagnostic_sample"}
            | {"error_judgements", "task_judgements"},  # issue 36: the granularity judges' error overlap
        ),
    ),
    "annotation_sample": (
        "validation",
        None,
        {"predictions", "scores", "items", "languages"}
        | {"task_predictions", "granularity_tasks", "long_paragraphs"},
    ),
    **dict.fromkeys(["keypoints", "keypoint_calls"], ("validation", None, {"annotation_sample"})),
    "annotation_exports": ("validation", None, {"annotation_sample", "keypoints", "paragraphs"}),
    **dict.fromkeys(
        ["human_annotations", "annotation_imports"],
        ("validation", None, {"annotation_exports", "annotation_sample", "keypoints"}),
    ),
    "duckdb_catalog": (
        "storage",
        None,
        {"languages", "articles", "paragraphs", "items", "predictions", "calls", "scores", "estimates"}
        | {"study_results"},
    ),
}
EXPECTED_CHECKS = {
    ("corpus_audit", "alignment_coverage"),
    ("paragraphs", "language_has_paragraphs"),
    ("scores", "has_scores"),
    ("items", "item_bank_not_empty"),
    ("predictions", "one_row_per_slot"),
    ("predictions", "parse_failure_rate"),
    ("long_documents", "every_bucket_has_documents"),
    ("granularity_tasks", "task_bank_not_empty"),
    ("task_predictions", "task_answers_parsed"),
    ("task_scores", "task_scores_complete"),
    ("error_taxonomy_results", "error_taxonomy_estimated"),
    ("diagnostic_sample", "diagnostic_sample_complete"),
    ("error_judgements", "judgements_usable"),
    ("granularity_results", "granularity_analysed"),
    ("human_validation_results", "human_validation_analysed"),
    ("annotation_sample", "annotation_sample_filled"),
    ("keypoints", "keypoints_written"),
    ("human_annotations", "annotations_imported"),
}


# The daemon's condition per asset (orchestration/_automation.py): corpus and responses are built
# once per partition, cheap study inputs follow their upstream, whole-study outputs wait for
# every upstream partition.
ONCE, FOLLOW, AFTER_ALL = "build_once", "follow_upstream", "after_every_partition"
EXPECTED_AUTOMATION = {
    **dict.fromkeys(["articles", "paragraphs", "corpus_audit", "item_translations"], ONCE),
    "model_calls": "build_stream",
    **dict.fromkeys(["predictions", "calls", "scores"], ONCE),
    **dict.fromkeys(
        ["task_predictions", "task_calls", "task_scores", "task_judgements", "task_judge_calls"], ONCE
    ),
    **dict.fromkeys(
        [
            "languages",
            "study_sample",
            "tokenizer_fertility_by_language",
            "items",
            "item_rejections",
            "item_calls",
        ],
        FOLLOW,
    ),
    **dict.fromkeys(["item_level_audit", "level_audit_calls"], FOLLOW),
    **dict.fromkeys(
        ["long_documents", "long_paragraphs", "granularity_tasks", "task_rejections", "task_writer_calls"],
        FOLLOW,
    ),
    "report": FOLLOW,
    **dict.fromkeys(["error_taxonomy_estimates", "error_taxonomy_results"], FOLLOW),
    "diagnostic_sample": AFTER_ALL,
    **dict.fromkeys(["error_judgements", "order_bias_judgements", "judge_calls"], FOLLOW),
    **dict.fromkeys(["estimates", "study_results", "duckdb_catalog"], AFTER_ALL),
    **dict.fromkeys(["granularity_estimates", "granularity_results"], AFTER_ALL),
    **dict.fromkeys(
        ["human_qc", "human_validation_joins", "human_validation_estimates", "human_validation_results"],
        AFTER_ALL,
    ),
    "annotation_sample": AFTER_ALL,
    **dict.fromkeys(
        ["keypoints", "keypoint_calls", "annotation_exports", "human_annotations", "annotation_imports"],
        FOLLOW,
    ),
}


def _partitioning(node: dg.AssetSpec | object) -> str | None:
    partitions = getattr(node, "partitions_def", None)
    if partitions is None:
        return None
    if isinstance(partitions, dg.MultiPartitionsDefinition):
        return " x ".join(d.name for d in partitions.partitions_defs)
    if isinstance(partitions, dg.DynamicPartitionsDefinition):
        return str(partitions.name)  # the model dimension alone
    return LANGUAGE


def test_graph_snapshot(demo_config_dir: Path, tmp_path: Path) -> None:
    defs = build_definitions(demo_config_dir, tmp_path / "data")
    graph = defs.resolve_asset_graph()
    actual = {
        node.key.to_user_string(): (
            node.group_name,
            _partitioning(node),
            {parent.to_user_string() for parent in node.parent_keys},
        )
        for node in graph.asset_nodes
    }
    assert actual == EXPECTED_ASSETS
    checks = {(key.asset_key.to_user_string(), key.name) for key in graph.asset_check_keys}
    assert checks == EXPECTED_CHECKS
    assert {s.name for s in defs.sensors or []} == {
        "model_partitions_sensor",
        "study_automation_sensor",
        "corpus_automation_sensor",
        "model_family_automation_sensor",
        "annotation_inbox_sensor",
        "folder_records_sensor",
    }
    assert {s.name for s in defs.schedules or []} == {"missing_partitions_schedule"}
    jobs = {job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__")}
    assert jobs == {
        "corpus_job",
        "study_inputs_job",
        "model_calls_job",
        "responses_job",
        "analysis_job",
        "human_validation_job",
    }


def test_language_partitions_follow_the_config(demo_config_dir: Path, tmp_path: Path) -> None:
    defs = build_definitions(demo_config_dir, tmp_path / "data")
    node = defs.resolve_asset_graph().get(dg.AssetKey("paragraphs"))
    assert node.partitions_def is not None
    assert node.partitions_def.get_partition_keys() == ["en", "pt", "is", "mt", "ka", "ht", "sw"]


def test_module_import_does_no_io() -> None:
    import importlib

    module = importlib.import_module("clcg_pipeline.definitions")
    assert callable(module.build_definitions)


def test_the_daemon_automates_every_asset(demo_config_dir: Path, tmp_path: Path) -> None:
    defs = build_definitions(demo_config_dir, tmp_path / "data")
    graph = defs.resolve_asset_graph()
    labels = {
        node.key.to_user_string(): node.automation_condition.get_label()
        if node.automation_condition
        else None
        for node in graph.asset_nodes
    }
    assert labels == EXPECTED_AUTOMATION
    sensors = [s for s in defs.sensors or [] if isinstance(s, dg.AutomationConditionSensorDefinition)]
    # Running as soon as the daemon starts: nobody has to switch them on in the UI.
    assert all(sensor.default_status == dg.DefaultSensorStatus.RUNNING for sensor in sensors)
    # Together they cover every asset, each asset once.
    covered = [key for sensor in sensors for key in sensor.asset_selection.resolve(graph)]
    assert sorted(covered) == sorted(graph.materializable_asset_keys)
    # The language x model family is requested as backfills: its single-run policy then makes a
    # new model's languages one run (only a backfill honours a backfill policy).
    family = next(s for s in sensors if s.name == "model_family_automation_sensor")
    assert family.emit_backfills
    assert {key.to_user_string() for key in family.asset_selection.resolve(graph)} == set(RESPONSE_ASSETS)


def test_checks_report_per_partition(demo_config_dir: Path, tmp_path: Path) -> None:
    """A check on a partitioned asset has a result per partition (a pass on one language must
    not hide a failure on another)."""
    graph = build_definitions(demo_config_dir, tmp_path / "data").resolve_asset_graph()
    for check_key in graph.asset_check_keys:
        asset = graph.get(check_key.asset_key)
        spec = graph.get_check_spec(check_key)
        assert spec.partitions_def == asset.partitions_def, check_key


def test_runs_execute_in_process(demo_config_dir: Path, tmp_path: Path) -> None:
    """No process per step: the steps of a launched run share the run worker."""
    defs = build_definitions(demo_config_dir, tmp_path / "data")
    # Every job, the implicit one the daemon's automation runs included.
    assert {job.executor_def.name for job in defs.resolve_all_job_defs()} == {"in_process"}


def test_workspace_names_the_code_location_runs_are_filed_under() -> None:
    """``clcg run`` files its runs under CODE_LOCATION; make dev must load it under that name."""
    root = Path(__file__).resolve().parents[1]
    workspace = yaml.safe_load((root / "workspace.yaml").read_text(encoding="utf-8"))
    assert [entry["python_module"]["location_name"] for entry in workspace["load_from"]] == [CODE_LOCATION]
