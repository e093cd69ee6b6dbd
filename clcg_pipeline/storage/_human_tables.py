"""The human validation's data contracts: annotation round trip and analysis.

Kept apart from ``_tables.py`` (which merges them into ``TABLES``) so each file stays readable.
"""

from __future__ import annotations

import pyarrow as pa

_STR = pa.string()
_I64 = pa.int64()
_F64 = pa.float64()
_BOOL = pa.bool_()
_STRS = pa.list_(pa.string())

HUMAN_TABLES: dict[str, pa.Schema] = {
    # V3 (issue 10): the human-validation annotation round trip (validation/_annotation_sample.py,
    # _keypoints.py, _exchange.py). Pair and attention rows leave single-only columns null.
    "annotation_sample": pa.schema(
        [
            ("task_id", _STR),
            ("kind", _STR),
            ("model", _STR),
            ("language", _STR),
            ("doc_id", _STR),
            ("item_id", _STR),
            ("rep", _I64),
            ("level", _STR),
            ("item_source", _STR),
            ("category", _STR),
            ("quality_bin", _STR),
            ("token_f1", _F64),
            ("annotators", _STRS),
            ("positions", pa.list_(_I64)),
            ("response", _STR),
            ("response_a", _STR),
            ("response_b", _STR),
            ("a_side", _STR),
            ("language_a", _STR),
            ("language_b", _STR),
            ("language_higher", _STR),
            ("language_lower", _STR),
            ("token_f1_a", _F64),
            ("token_f1_b", _F64),
            ("question", _STR),
            ("gold_answer", _STR),
            ("passage_ref", _STR),
            ("ask_error_category", _BOOL),
            ("attention_field", _STR),
            ("attention_expected", _STR),
        ]
    ),
    "keypoints": pa.schema(
        [
            ("item_id", _STR),
            ("keypoint_id", _STR),
            ("text", _STR),
            ("writer", _STR),
            ("call_id", _STR),
            ("prompt_version", _STR),
            ("template_hash", _STR),
        ]
    ),
    "human_annotations": pa.schema(
        [
            ("annotation_id", _STR),
            ("task_id", _STR),
            ("annotator_id", _STR),
            ("source_file", _STR),
            ("source_sha256", _STR),
            ("record", _STR),
            ("kind", _STR),
            ("adequacy", _I64),
            ("keypoint_hits", _STRS),
            ("keypoint_recall", _F64),
            ("question_valid", _STR),
            ("equivalence", _STR),
            ("attribution", _STR),
            ("consistency", _STR),
            ("primary_error_category", _STR),
            ("preference", _STR),
            ("preferred", _STR),
            ("confidence", _I64),
            ("seconds", _F64),
            ("comment", _STR),
            ("attention_correct", _BOOL),
            ("attention_passed", _BOOL),
            ("imported_at", _STR),
            ("simulated", _BOOL),
            # issue 11: paragraph-filling ratings (kind fill), the fill judge's dimensions 0-20
            ("topic_fidelity", _I64),
            ("local_coherence", _I64),
            ("entity_consistency", _I64),
            ("instruction_following", _I64),
            ("format_compliance", _I64),
            ("fill_total", _I64),
            # issue 19: which Label Studio annotation the rating is, and its revision (1 = first)
            ("ls_annotation_id", _STR),
            ("ls_updated_at", _STR),
            ("revision", _I64),
        ]
    ),
    "annotation_imports": pa.schema(
        [
            ("file", _STR),
            ("sha256", _STR),
            ("format", _STR),
            ("records", _I64),
            # issue 19: what the file's ratings did (refused: the records that refused the file)
            ("imported", _I64),
            ("skipped", _I64),
            ("revised", _I64),
            # issue 36: ratings imported as excluded (they contradict themselves or the codebook)
            ("excluded", _I64),
            ("refused", _I64),
            ("status", _STR),
            ("error", _STR),
            ("imported_at", _STR),
        ]
    ),
    # Issue 10 (V4): the human-validation analysis (validation/_qc.py, _human_analysis.py).
    "human_qc": pa.schema(
        [
            ("step", _STR),
            ("rule", _STR),
            ("excluded_annotators", _I64),
            ("excluded_ratings", _I64),
            ("remaining_annotators", _I64),
            ("remaining_ratings", _I64),
            ("annotators_with_ratings", _I64),
        ]
    ),
    "human_validation_estimates": pa.schema(
        [
            ("estimand", _STR),
            ("group", _STR),
            ("estimate", _F64),
            ("ci_low", _F64),
            ("ci_high", _F64),
            ("p", _F64),
            ("n", _I64),
            ("n_clusters", _I64),
            ("status", _STR),
            ("flags", _STR),
        ]
    ),
    "human_validation_joins": pa.schema(
        [
            ("annotation_id", _STR),
            ("task_id", _STR),
            ("annotator_id", _STR),
            ("kind", _STR),
            ("model", _STR),
            ("language", _STR),
            ("doc_id", _STR),
            ("item_id", _STR),
            ("rep", _I64),
            ("category", _STR),
            ("quality_bin", _STR),
            ("token_f1", _F64),
            ("qc_step", _STR),
            ("qc_reason", _STR),
            ("adequacy", _I64),
            ("keypoint_recall", _F64),
            ("question_valid", _STR),
            ("equivalence", _STR),
            ("attribution", _STR),
            ("consistency", _STR),
            ("primary_error_category", _STR),
            ("preference", _STR),
            ("confidence", _I64),
            ("seconds", _F64),
            ("language_higher", _STR),
            ("a_side", _STR),
            ("answer", _STR),
            ("prediction_status", _STR),
            ("score_token_f1", _F64),
            ("score_status", _STR),
            ("judge", _STR),
            ("judge_label", _STR),
            ("judge_collapsed_label", _STR),
            ("judge_semantic_error", _BOOL),
            ("judge_status", _STR),
            ("simulated", _BOOL),
        ]
    ),
}

# issue 19: every revision of every imported rating (the current one included, ``current`` true),
# written by the import beside ``human_annotations``, which holds the current revisions only.
# Issue 36: ``excluded_reason``, why a revision is excluded (null when it counts).
HUMAN_TABLES["human_annotation_revisions"] = pa.schema(
    [*HUMAN_TABLES["human_annotations"], pa.field("current", _BOOL), pa.field("excluded_reason", _STR)]
)
