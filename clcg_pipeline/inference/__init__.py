"""Inference: versioned prompts, provider adapters, the call cache, the async runner, parsing."""

from clcg_pipeline.inference._cache import CallCache
from clcg_pipeline.inference._credentials import MissingCredentialsError, check_credentials
from clcg_pipeline.inference._lexical import content_words, lexical_answers
from clcg_pipeline.inference._parse import parse_answers
from clcg_pipeline.inference._predict import InferenceResult, plan_partition, predict_partition
from clcg_pipeline.inference._prompts import (
    NOT_STATED,
    PROMPT_VERSIONS,
    ChatRequest,
    Question,
    model_key,
    render_request,
    resolve_settings,
)
from clcg_pipeline.inference._runner import (
    AdaptiveLimiter,
    CallResult,
    ProviderConfigError,
    RetryPolicy,
    arun_requests,
    run_requests,
)
from clcg_pipeline.inference._tokens import TOKENIZER, count_tokens

__all__ = [
    "NOT_STATED",
    "PROMPT_VERSIONS",
    "TOKENIZER",
    "AdaptiveLimiter",
    "CallCache",
    "CallResult",
    "ChatRequest",
    "InferenceResult",
    "MissingCredentialsError",
    "ProviderConfigError",
    "Question",
    "RetryPolicy",
    "arun_requests",
    "check_credentials",
    "content_words",
    "count_tokens",
    "lexical_answers",
    "model_key",
    "parse_answers",
    "plan_partition",
    "predict_partition",
    "render_request",
    "resolve_settings",
    "run_requests",
]
