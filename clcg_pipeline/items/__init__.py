"""Item bank: frozen/human items, LLM generation with deterministic validation, level audit."""

from clcg_pipeline.items._generate import (
    GENERATION_SETTINGS,
    PROVENANCE_COLUMNS,
    GeneratedBank,
    generate_bank,
    generate_items,
    generate_items_with_calls,
    generation_requests,
    parse_generated,
)
from clcg_pipeline.items._level_audit import (
    AGREEMENT_COLUMNS,
    LEVEL_AUDIT_COLUMNS,
    LEVEL_AUDIT_VERSION,
    level_agreement,
    level_audit_requests,
    parse_level_audit,
    run_level_audit,
    run_level_audit_with_calls,
)
from clcg_pipeline.items._prompts import (
    GENERATION_VERSION,
    LEVEL_FORMAT,
    LEVEL_INSTRUCTIONS,
    POLAR_LABELS,
    prompt_version,
    render_messages,
    template_hash,
)
from clcg_pipeline.items._status import ItemBankStatus, item_bank_status
from clcg_pipeline.items._validate import REJECTION_COLUMNS, RULES, rejection_summary, validate_items

__all__ = [
    "AGREEMENT_COLUMNS",
    "GENERATION_SETTINGS",
    "GENERATION_VERSION",
    "LEVEL_AUDIT_COLUMNS",
    "LEVEL_AUDIT_VERSION",
    "LEVEL_FORMAT",
    "LEVEL_INSTRUCTIONS",
    "POLAR_LABELS",
    "PROVENANCE_COLUMNS",
    "REJECTION_COLUMNS",
    "RULES",
    "GeneratedBank",
    "ItemBankStatus",
    "generate_bank",
    "generate_items",
    "generate_items_with_calls",
    "generation_requests",
    "item_bank_status",
    "level_agreement",
    "level_audit_requests",
    "parse_generated",
    "parse_level_audit",
    "prompt_version",
    "rejection_summary",
    "render_messages",
    "run_level_audit",
    "run_level_audit_with_calls",
    "template_hash",
    "validate_items",
]
