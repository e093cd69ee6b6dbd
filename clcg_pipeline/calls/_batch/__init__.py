"""Batch mode: big backfills through the providers' batch APIs (OpenAI Batch, Anthropic
Message Batches, Gemini batch mode), collected into the same cache and rows as online calls.

``_base`` holds the backend interface and the driver every backend shares (budgets, the
pending-batch record, polling, collection); one module per provider API implements it.
"""

from clcg_pipeline.calls._batch._base import BATCH_PROVIDERS, run_batch

__all__ = ["BATCH_PROVIDERS", "run_batch"]
