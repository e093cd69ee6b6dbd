"""The data contracts: one Arrow schema per table (DESIGN.md, "Data contracts").

Every asset's DataFrame is conformed to its schema before it is written, so a column that
is missing or of the wrong type fails at the producer, naming the table and column, instead
of surfacing later as a confusing query result. Columns beyond the contract are kept.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

_STR = pa.string()
_I64 = pa.int64()
_F64 = pa.float64()
_BOOL = pa.bool_()
_STRS = pa.list_(pa.string())

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
            ("estimate", _F64),
            ("ci_low", _F64),
            ("ci_high", _F64),
            ("p", _F64),
            ("p_adj", _F64),
            ("n", _I64),
            # Added for issue 9 (analysis owner): nullable; see docs/ESTIMANDS.md.
            ("n_articles", _I64),
            ("valid_replicates", _I64),
            ("p_bound", _BOOL),
            ("identifiable", _BOOL),
            ("status", _STR),
            ("flags", _STR),
        ]
    ),
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
