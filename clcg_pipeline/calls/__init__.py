"""Calling models, for every stage that calls one.

Requests and their call ids, results and costs, budgets, the async runner (retry policy,
adaptive limiter, call sessions), the call cache, cross-process coordination, credentials,
token counting, the judge API, one adapter per provider and per provider batch API, and the
offline models. The fake provider server (``clcg_pipeline.calls.fake_server``) speaks the
providers' HTTP APIs for tests and the deployment smoke test.
"""

from clcg_pipeline.calls._batch import BATCH_PROVIDERS, run_batch
from clcg_pipeline.calls._budget import (
    RUN_BUDGET_STOP,
    STUDY_BUDGET_STOP,
    Budget,
    Grant,
    budget_stop_line,
    configured_limit,
    died_mid_call,
    op_budget,
    run_budget,
    study_charged,
    study_spent,
)
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import (
    ALLOW_LOCAL_ENV,
    COORD_URL_ENV,
    COORDINATION_TAG,
    WAIT,
    CallClaims,
    CoordinationRefused,
    SharedSlots,
    SpendLedger,
    check_coordination,
    coordination_tags,
)
from clcg_pipeline.calls._coord_postgres import PgCallClaims, PgSharedSlots, PgSpendLedger, settings_from_url
from clcg_pipeline.calls._credentials import MissingCredentialsError, check_credentials
from clcg_pipeline.calls._judge import (
    CALL_COLUMNS,
    JudgeTemplate,
    judge_settings,
    render_judge_request,
    run_judge,
)
from clcg_pipeline.calls._lexical import STOPWORDS, content_words, lexical_answers
from clcg_pipeline.calls._limiter import AdaptiveLimiter
from clcg_pipeline.calls._options import CallOptions, Progress, logged_progress
from clcg_pipeline.calls._requests import (
    NOT_STATED,
    OPTIONS_HINT,
    PARAGRAPH_MARK,
    POLAR_HINT,
    PROMPT_VERSIONS,
    ChatRequest,
    model_key,
    resolve_settings,
)
from clcg_pipeline.calls._results import (
    PROVIDER_TAG,
    REFUSAL_REASONS,
    TRUNCATED_REASONS,
    CallResult,
    Origin,
    bind,
    call_origin,
    call_row,
    cost_usd,
    partition_origin,
)
from clcg_pipeline.calls._retry import RetryPolicy
from clcg_pipeline.calls._runner import CallSession, ProviderConfigError, arun_requests, run_requests
from clcg_pipeline.calls._tokens import TOKENIZER, count_tokens, estimate_input_tokens, estimate_output_tokens

__all__ = [
    "ALLOW_LOCAL_ENV",
    "BATCH_PROVIDERS",
    "CALL_COLUMNS",
    "COORDINATION_TAG",
    "COORD_URL_ENV",
    "NOT_STATED",
    "OPTIONS_HINT",
    "PARAGRAPH_MARK",
    "POLAR_HINT",
    "PROMPT_VERSIONS",
    "PROVIDER_TAG",
    "REFUSAL_REASONS",
    "RUN_BUDGET_STOP",
    "STOPWORDS",
    "STUDY_BUDGET_STOP",
    "TOKENIZER",
    "TRUNCATED_REASONS",
    "WAIT",
    "AdaptiveLimiter",
    "Budget",
    "CallCache",
    "CallClaims",
    "CallOptions",
    "CallResult",
    "CallSession",
    "ChatRequest",
    "CoordinationRefused",
    "Grant",
    "JudgeTemplate",
    "MissingCredentialsError",
    "Origin",
    "PgCallClaims",
    "PgSharedSlots",
    "PgSpendLedger",
    "Progress",
    "ProviderConfigError",
    "RetryPolicy",
    "SharedSlots",
    "SpendLedger",
    "arun_requests",
    "bind",
    "budget_stop_line",
    "call_origin",
    "call_row",
    "check_coordination",
    "check_credentials",
    "configured_limit",
    "content_words",
    "coordination_tags",
    "cost_usd",
    "count_tokens",
    "died_mid_call",
    "estimate_input_tokens",
    "estimate_output_tokens",
    "judge_settings",
    "lexical_answers",
    "logged_progress",
    "model_key",
    "op_budget",
    "partition_origin",
    "render_judge_request",
    "resolve_settings",
    "run_batch",
    "run_budget",
    "run_judge",
    "run_requests",
    "settings_from_url",
    "study_charged",
    "study_spent",
]
