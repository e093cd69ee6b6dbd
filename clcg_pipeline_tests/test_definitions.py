"""A snapshot of the graph: an accidental change to assets, groups, deps or partitions shows here."""

from pathlib import Path

import dagster as dg

from clcg_pipeline.definitions import build_definitions

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
    "item_level_audit": ("items", None, {"items", "paragraphs"}),
    "predictions": ("inference", GRID, {"items", "paragraphs", "study_sample"}),
    "calls": ("inference", GRID, {"items", "paragraphs", "study_sample"}),
    "scores": ("scoring", GRID, {"items", "predictions"}),
    "estimates": (
        "analysis",
        None,
        {"articles", "corpus_audit", "scores", "tokenizer_fertility_by_language"},
    ),
    "study_results": (
        "analysis",
        None,
        {"articles", "corpus_audit", "scores", "tokenizer_fertility_by_language"},
    ),
    "report": ("report", None, {"estimates", "study_results"}),
    "duckdb_catalog": (
        "storage",
        None,
        {"languages", "articles", "paragraphs", "items", "predictions", "calls", "scores", "estimates"},
    ),
}
EXPECTED_CHECKS = {
    ("corpus_audit", "alignment_coverage"),
    ("items", "item_bank_not_empty"),
    ("predictions", "one_row_per_slot"),
    ("predictions", "parse_failure_rate"),
}


def _partitioning(node: dg.AssetSpec | object) -> str | None:
    partitions = getattr(node, "partitions_def", None)
    if partitions is None:
        return None
    if isinstance(partitions, dg.MultiPartitionsDefinition):
        return " x ".join(d.name for d in partitions.partitions_defs)
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
    assert {s.name for s in defs.sensors or []} >= {"model_partitions_sensor"}
    assert {s.name for s in defs.schedules or []} == {"missing_partitions_schedule"}
    jobs = {job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__")}
    assert jobs == {"corpus_job", "study_inputs_job", "responses_job", "analysis_job"}


def test_language_partitions_follow_the_config(demo_config_dir: Path, tmp_path: Path) -> None:
    defs = build_definitions(demo_config_dir, tmp_path / "data")
    node = defs.resolve_asset_graph().get(dg.AssetKey("paragraphs"))
    assert node.partitions_def is not None
    assert node.partitions_def.get_partition_keys() == ["en", "pt", "is", "mt", "ka", "ht", "sw"]


def test_module_import_does_no_io() -> None:
    import importlib

    module = importlib.import_module("clcg_pipeline.definitions")
    assert callable(module.build_definitions)
