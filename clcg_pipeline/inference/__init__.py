"""The responses stage: the versioned answering prompts, the partition's requests and the
parsing of answers into per-item prediction rows. Calling the model is ``clcg_pipeline.calls``."""

from clcg_pipeline.inference._parse import parse_answers
from clcg_pipeline.inference._predict import (
    InferenceResult,
    partition_requests,
    plan_partition,
    predict_partition,
    sampled_inputs,
    string_list,
)
from clcg_pipeline.inference._prompts import Question, render_request

__all__ = [
    "InferenceResult",
    "Question",
    "parse_answers",
    "partition_requests",
    "plan_partition",
    "predict_partition",
    "render_request",
    "sampled_inputs",
    "string_list",
]
