"""The granularity analysis: scores, cross-lingual gaps and the position curve (docs/GRANULARITY.md).

Documents play the articles' role: every interval is the study's article-cluster bootstrap
(``clcg_pipeline.analysis``; one multiplicity matrix over the sorted document ids, so every
contrast is taken inside the same replicate) and every estimate goes through the suite's
identifiability rule (``SuiteContext.qualify`` with ``study.min_articles``).

The gap is H1's estimator family, paired within task: every non-English row of a task is
compared with the mean English score of the same task (same model and metric), and a cell's
gap is the micro mean of those differences over its rows. On a balanced design (every task
answered equally often in English and the language) it equals mean_en - mean_l; tasks with no
English row (e.g. translation into the language) are left out of the gaps and counted.

Metrics differ across granularities (accuracy, ROUGE-L, BLEU/chrF): raw levels are not
comparable across granularities, only trends and gaps within one metric (MGAL's caveat).

The bootstrap is ``clcg_pipeline.analysis.ClusterBootstrap`` with documents as its unit.
One module per step: the rows and pairings (``_rows``), the estimates table
(``_estimates``), scores, gaps and the no-context drop (``_gaps``), the position curve
(``_position``), the judges (``_judges``), what the estimates leave out (``_excluded``: rows
without a reference, counted, not zeros; paragraphs left out of every language version to keep
them aligned, docs/GRANULARITY.md), the extra dimensions (``_dimensions``: length buckets,
sentence position, roles; ``_ranks``: model ranks and gap trends across granularities) and the
results document (``_results``).
"""

from clcg_pipeline.granularity._analysis._estimates import too_few_documents
from clcg_pipeline.granularity._analysis._judges import (
    NO_HUMAN_RATINGS,
    cloze_error_shares,
    human_fill_totals,
    human_judge_correlation,
    judge_agreement,
    ordinal_alpha,
)
from clcg_pipeline.granularity._analysis._results import (
    GranularityAnalysis,
    analyse_granularity,
    prompt_tokens_by_task,
)
from clcg_pipeline.granularity._analysis._rows import EXTRA_METRICS, POSITIONS

__all__ = [
    "EXTRA_METRICS",
    "NO_HUMAN_RATINGS",
    "POSITIONS",
    "GranularityAnalysis",
    "analyse_granularity",
    "cloze_error_shares",
    "human_fill_totals",
    "human_judge_correlation",
    "judge_agreement",
    "ordinal_alpha",
    "prompt_tokens_by_task",
    "too_few_documents",
]
