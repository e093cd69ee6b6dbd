"""The data contracts: one Arrow schema per table (DESIGN.md, "Data contracts").

Every asset's DataFrame is conformed to its schema before it is written, so a column that
is missing or of the wrong type fails at the producer, naming the table and column, instead
of surfacing later as a confusing query result. Columns beyond the contract are kept.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from clcg_pipeline.storage._human_tables import HUMAN_TABLES

_STR = pa.string()
_I64 = pa.int64()
_F64 = pa.float64()
_BOOL = pa.bool_()
_STRS = pa.list_(pa.string())

# Every table of provider calls (responses, granularity tasks, judges, writers) shares these
# columns, so spend and outcomes can be summed across them with one query.
_CALL_FIELDS: list[tuple[str, pa.DataType]] = [
    ("call_id", _STR),
    ("model", _STR),
    ("provider", _STR),
    ("doc_id", _STR),
    ("language", _STR),
    ("context_scope", _STR),
    ("rep", _I64),
    ("prompt_version", _STR),
    ("input_tokens", _I64),
    ("output_tokens", _I64),
    ("cost_usd", _F64),
    ("latency_s", _F64),
    ("attempts", _I64),
    ("outcome", _STR),
    ("error", _STR),
    ("cached", _BOOL),
    # The run that paid for the call, and when (set by the IO manager: storage/_paid.py).
    ("paid_run", _STR),
    ("paid_at", pa.timestamp("us", tz="UTC")),
    # The host it paid from (socket.gethostname()); null in files written before it was kept.
    ("paid_host", _STR),
]

# An estimand's figures, in the estimates table and the pair table alike (n_articles and
# valid_replicates: nullable, see docs/ESTIMANDS.md).
_ESTIMAND_FIELDS: list[tuple[str, pa.DataType]] = [
    ("estimate", _F64),
    ("ci_low", _F64),
    ("ci_high", _F64),
    ("p", _F64),
    ("p_adj", _F64),
    ("n", _I64),
    ("n_articles", _I64),
    ("valid_replicates", _I64),
    ("p_bound", _BOOL),
    ("identifiable", _BOOL),
]

TABLES: dict[str, pa.Schema] = {
    "languages": pa.schema(
        [
            ("iso", _STR),
            ("name", _STR),
            ("script", _STR),
            ("joshi_class", _I64),
            ("joshi_class_sensitivity", _I64),
            ("role", _STR),
            ("speakers", _F64),
            ("risk", _STR),
            ("isolate", _STR),
            ("non_latin", _BOOL),
            ("optional", _BOOL),
        ]
    ),
    "articles": pa.schema(
        [
            ("doc_id", _STR),
            ("language", _STR),
            ("title", _STR),
            ("published", pa.date32()),
            ("n_paragraphs", _I64),
            ("n_tokens", _I64),
            ("coverage", _F64),
            ("source", _STR),
        ]
    ),
    "paragraphs": pa.schema(
        [("doc_id", _STR), ("language", _STR), ("pid", _STR), ("ordinal", _I64), ("text", _STR)]
    ),
    "items": pa.schema(
        [
            ("item_id", _STR),
            ("doc_id", _STR),
            ("item_source", _STR),
            ("level", _STR),
            ("question", _STR),
            ("gold_answer", _STR),
            ("answer_format", _STR),
            ("options", _STRS),
            ("target_pids", _STRS),
            ("supporting_pids", _STRS),
            ("gold_answerable", _BOOL),
            ("generator", _STR),
            ("prompt_hash", _STR),
            ("level_label_validated", _BOOL),
        ]
    ),
    "calls": pa.schema(
        [
            *_CALL_FIELDS,
        ]
    ),
    "predictions": pa.schema(
        [
            ("model", _STR),
            ("language", _STR),
            ("doc_id", _STR),
            ("item_id", _STR),
            ("rep", _I64),
            ("context_scope", _STR),
            ("answer", _STR),
            ("status", _STR),
            ("call_id", _STR),
        ]
    ),
    "scores": pa.schema(
        [
            ("model", _STR),
            ("language", _STR),
            ("doc_id", _STR),
            ("item_id", _STR),
            ("rep", _I64),
            ("context_scope", _STR),
            ("level", _STR),
            ("item_source", _STR),
            ("token_f1", _F64),
            ("exact_match", _F64),
            ("accuracy", _F64),
            ("rouge_l", _F64),
            ("semsim", _F64),
            ("status", _STR),
        ]
    ),
    "estimates": pa.schema(
        [
            ("estimand", _STR),
            ("group", _STR),
            *_ESTIMAND_FIELDS,
            ("status", _STR),
            ("flags", _STR),
        ]
    ),
    # Issue 37: every pair of models' paired contrast, one row per pair and gap (results/_merge.py);
    # study_results.json keeps only the pairs a reader needs and names this table.
    "model_pairs": pa.schema(
        [
            ("pair", _STR),
            ("model_a", _STR),
            ("model_b", _STR),
            ("n_common_items", _I64),
            ("gap", _STR),
            *_ESTIMAND_FIELDS,
            ("reason", _STR),
            ("flags", _STRS),
            ("shown", _BOOL),
        ]
    ),
    # Issue 11, G1 (granularity/_documents.py, _tasks.py): long documents and the task bank.
    "long_documents": pa.schema(
        [
            ("doc_id", _STR),
            ("language", _STR),
            ("bucket", _STR),
            ("n_tokens", _I64),
            ("n_paragraphs", _I64),
            ("source", _STR),
            ("assembly", _STR),
            ("member_doc_ids", _STRS),
            ("summary", _STR),
            ("n_tokens_reference", _I64),
        ]
    ),
    "long_paragraphs": pa.schema(
        [
            ("doc_id", _STR),
            ("language", _STR),
            ("pid", _STR),
            ("ordinal", _I64),
            ("region", _STR),
            ("position", _STR),
            ("text", _STR),
            ("source_doc_id", _STR),
            ("source_pid", _STR),
            ("n_tokens", _I64),
        ]
    ),
    "granularity_tasks": pa.schema(
        [
            ("task_id", _STR),
            ("group_id", _STR),
            ("doc_id", _STR),
            ("task", _STR),
            ("granularity", _STR),
            ("region", _STR),
            ("position", _STR),
            ("question", _STR),
            ("gold", _STR),
            ("options", _STRS),
            ("blank_pids", _STRS),
            ("evidence_pids", _STRS),
            ("max_output_tokens", _I64),
            ("builder", _STR),
            ("frozen_hash", _STR),
            ("bucket", _STR),
            ("sentence_index", _I64),
            ("sentence_position", _STR),
            ("marker", _STR),
            ("context_pids", _STRS),
            ("answer_type", _STR),
            ("doc_hash", _STR),
            ("role", _STR),
            ("evidence", _STRS),
        ]
    ),
    "task_rejections": pa.schema(
        [
            ("task_id", _STR),
            ("doc_id", _STR),
            ("task", _STR),
            ("granularity", _STR),
            ("region", _STR),
            ("position", _STR),
            ("rule", _STR),
            ("detail", _STR),
        ]
    ),
    # Issue 10 (V2): every estimand of the error-taxonomy analysis (validation/_taxonomy_analysis.py).
    "error_taxonomy_estimates": pa.schema(
        [
            ("estimand", _STR),
            ("judge", _STR),
            ("group", _STR),
            ("estimate", _F64),
            ("ci_low", _F64),
            ("ci_high", _F64),
            ("n", _I64),
            ("n_articles", _I64),
            ("status", _STR),
            ("flags", _STR),
        ]
    ),
    # V1 (issue 10): the error taxonomy's sample, judgements and judge calls.
    "diagnostic_sample": pa.schema(
        [
            ("pair_id", _STR),
            ("model", _STR),
            ("doc_id", _STR),
            ("item_id", _STR),
            ("rep", _I64),
            ("context_scope", _STR),
            ("language", _STR),
            ("level", _STR),
            ("item_source", _STR),
            ("en_score", _F64),
            ("target_score", _F64),
            ("score_delta", _F64),
            ("candidate_loss", _BOOL),
            ("metric", _STR),
        ]
    ),
    "error_judgements": pa.schema(
        [
            ("pair_id", _STR),
            ("side", _STR),
            ("judge", _STR),
            ("label", _STR),
            ("collapsed_label", _STR),
            ("semantic_error", _BOOL),
            ("evidence", _STR),
            ("status", _STR),
            ("error", _STR),
            ("prompt_version", _STR),
            ("template_hash", _STR),
            ("call_id", _STR),
            ("model", _STR),
            ("language", _STR),
            ("doc_id", _STR),
            ("item_id", _STR),
        ]
    ),
    "order_bias_judgements": pa.schema(
        [
            ("pair_id", _STR),
            ("judge", _STR),
            ("order", _STR),
            ("preferred", _STR),
            ("status", _STR),
            ("call_id", _STR),
        ]
    ),
    "judge_calls": pa.schema(
        [
            *_CALL_FIELDS,
            ("judge", _STR),
        ]
    ),
    # Issue 11, G2 (granularity/_predict.py, _scoring.py): task answers, calls, scores, judgements.
    "task_predictions": pa.schema(
        [
            ("model", _STR),
            ("language", _STR),
            ("doc_id", _STR),
            ("task_id", _STR),
            ("group_id", _STR),
            ("task", _STR),
            ("context", _STR),
            ("rep", _I64),
            ("answer", _STR),
            ("status", _STR),
            ("call_id", _STR),
            ("truncated", _BOOL),
            ("error", _STR),
        ]
    ),
    "task_calls": pa.schema(
        [
            *_CALL_FIELDS,
            ("task", _STR),
            ("group_id", _STR),
            ("n_tasks", _I64),
            ("request_hash", _STR),
            ("finish_reason", _STR),
        ]
    ),
    "task_scores": pa.schema(
        [
            ("model", _STR),
            ("language", _STR),
            ("doc_id", _STR),
            ("task_id", _STR),
            ("group_id", _STR),
            ("task", _STR),
            ("context", _STR),
            ("rep", _I64),
            ("granularity", _STR),
            ("region", _STR),
            ("position", _STR),
            ("metric", _STR),
            ("score", _F64),
            ("rouge_l", _F64),
            ("bleu", _F64),
            ("chrf", _F64),
            ("judge_total", _F64),
            ("judge_spread", _F64),
            ("status", _STR),
            ("judge_range", _F64),
            ("judge_n", _I64),
            ("judge_status", _STR),
            ("topic_fidelity", _F64),
            ("local_coherence", _F64),
            ("entity_consistency", _F64),
            ("instruction_following", _F64),
            ("format_compliance", _F64),
            ("bucket", _STR),
            ("sentence_position", _STR),
            ("role", _STR),
            ("bleu_tokenize", _STR),
        ]
    ),
    "task_judgements": pa.schema(
        [
            ("model", _STR),
            ("language", _STR),
            ("doc_id", _STR),
            ("task_id", _STR),
            ("group_id", _STR),
            ("task", _STR),
            ("context", _STR),
            ("rep", _I64),
            ("kind", _STR),
            ("judge", _STR),
            ("prompt_version", _STR),
            ("template_hash", _STR),
            ("status", _STR),
            ("error", _STR),
            ("call_id", _STR),
            ("topic_fidelity", _I64),
            ("local_coherence", _I64),
            ("entity_consistency", _I64),
            ("instruction_following", _I64),
            ("format_compliance", _I64),
            ("total", _I64),
            ("label", _STR),
            ("tags", _STRS),
            ("confidence", _STR),
            ("evidence", _STRS),
            ("judgement", _STR),
        ]
    ),
    "task_judge_calls": pa.schema(
        [
            *_CALL_FIELDS,
            ("judge", _STR),
            ("template_hash", _STR),
            ("request_hash", _STR),
            ("finish_reason", _STR),
        ]
    ),
    # Issue 33: the calls that write the study's inputs, in the record of what was paid like
    # every other call. The item generator's, one per English article x level (items/_generate.py).
    "item_calls": pa.schema(
        [
            *_CALL_FIELDS,
            ("level", _STR),
            ("request_hash", _STR),
            ("finish_reason", _STR),
        ]
    ),
    # The level auditor's, one per L0-L5 item (items/_level_audit.py; optional).
    "level_audit_calls": pa.schema(
        [
            *_CALL_FIELDS,
            ("item_id", _STR),
            ("request_hash", _STR),
            ("finish_reason", _STR),
        ]
    ),
    # The granularity task bank's writers (cloze confusions, word questions): the judge runner's rows.
    "task_writer_calls": pa.schema(
        [
            *_CALL_FIELDS,
            ("judge", _STR),
            ("template_hash", _STR),
            ("request_hash", _STR),
            ("finish_reason", _STR),
        ]
    ),
    # G3 (issue 11): every estimand of the granularity analysis (granularity/_analysis.py).
    "granularity_estimates": pa.schema(
        [
            ("estimand", _STR),
            ("group", _STR),
            ("task", _STR),
            ("granularity", _STR),
            ("metric", _STR),
            ("region", _STR),
            ("position", _STR),
            ("language", _STR),
            ("model", _STR),
            ("estimate", _F64),
            ("ci_low", _F64),
            ("ci_high", _F64),
            ("n", _I64),
            ("n_documents", _I64),
            ("valid_replicates", _I64),
            ("identifiable", _BOOL),
            ("status", _STR),
            ("flags", _STR),
        ]
    ),
    # The human validation's tables (storage/_human_tables.py).
    **HUMAN_TABLES,
}

PREDICTION_STATUSES = ("ok", "unparseable", "missing")


class ContractError(ValueError):
    """A table does not match its data contract."""


def conform(table: str, frame: pd.DataFrame) -> pa.Table:
    """Cast ``frame`` to ``table``'s contract; extra columns are kept after the contract's."""
    schema = TABLES[table]
    missing = [name for name in schema.names if name not in frame.columns]
    if missing:
        raise ContractError(f"table {table!r}: missing column(s) {missing}")
    extra = [c for c in frame.columns if c not in schema.names]
    arrays: list[pa.Array] = []
    fields: list[pa.Field] = []
    for field in schema:
        column = frame[field.name]
        if pa.types.is_list(field.type) and column.dtype != object:
            # an all-missing list column arrives as float NaN, which Arrow will not cast to a list
            column = column.astype(object).where(column.notna(), None)
        try:
            arrays.append(pa.array(column, type=field.type, from_pandas=True))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            raise ContractError(f"table {table!r}, column {field.name!r}: {exc}") from None
        fields.append(field)
    for name in extra:
        arr = pa.array(frame[name], from_pandas=True)
        arrays.append(arr)
        fields.append(pa.field(str(name), arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def empty_frame(table: str) -> pd.DataFrame:
    """An empty DataFrame with the contract's columns and dtypes."""
    return TABLES[table].empty_table().to_pandas()
