"""The ``context_scope`` section of ``study_results.json`` as a pydantic model (issue 34).

Owned here, declared by ``StudyResultsDocument`` (``_documents``), so
:func:`validate_document` checks it where the document is written and read. The producer is
analysis/sections/context.py (``context_scope``): the CLCG under the study band's context scope
and under ``item_grounded``, on the articles that have ``item_grounded`` rows, and their
difference; or, without such rows, its status only. Closed and strict like every section
(``_analysis_sections._Section``): a misspelt key or a value of another type is refused.
"""

from __future__ import annotations

from clcg_pipeline.storage._analysis_sections import EstimateRecord, _Section


class ContextScopeResults(_Section):
    """``context_scope``: the band's scope against ``item_grounded`` (analysis/sections/context.py).

    The band's own scope is written under its name, one of the configured context scopes
    (config ``ContextScope``: ``full_body``, ``closed_book``, ``item_grounded``), so each is a
    field here; a document has the one its band used, beside ``item_grounded``.
    """

    status: str | None = None  # only when there is nothing to compare: why
    articles: int | None = None  # the articles with item_grounded rows the panel resamples
    full_body: EstimateRecord | None = None
    closed_book: EstimateRecord | None = None
    item_grounded: EstimateRecord | None = None
    difference: EstimateRecord | None = None  # band scope minus item_grounded, two-sided
    difference_definition: str | None = None  # e.g. "full_body - item_grounded"
