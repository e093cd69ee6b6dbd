"""The estimators and tests of docs/ESTIMANDS.md, returning tables and a results document."""

from clcg_pipeline.analysis._bootstrap import (
    ClusterBootstrap,
    ClusterCells,
    ClusterTable,
    FineTable,
    Replicates,
    bootstrap_p,
    cluster_table,
    concat_cells,
    draw_multiplicities,
    percentile_ci,
    ratio,
    replicate,
    valid_replicates,
)
from clcg_pipeline.analysis._context import (
    NO_ESTIMATE,
    NO_VALID_REPLICATE,
    WITHHELD_FIELDS,
    SuiteContext,
    withheld_caveat,
    withheld_for_too_few,
    withheld_reason,
    withhold_fields,
)
from clcg_pipeline.analysis._definitions import GROUP_METRIC
from clcg_pipeline.analysis._drilldown import drilldown
from clcg_pipeline.analysis._h1 import estimate_h1, h1_core, roles_of
from clcg_pipeline.analysis._index import reason_of
from clcg_pipeline.analysis._io import (
    PAIR_STORE_FILE,
    estimate_file,
    pair_store_path,
    read_pair_store,
    read_scores,
    write_json,
    write_pair_store,
)
from clcg_pipeline.analysis._leaderboard import (
    LEADERBOARD_COLUMNS,
    LEADERBOARD_FILES,
    leaderboard,
    write_leaderboard,
)
from clcg_pipeline.analysis._mixed import mixed_h1
from clcg_pipeline.analysis._pair_store import PairStore
from clcg_pipeline.analysis._power import PowerQuestion, power_from_pilot
from clcg_pipeline.analysis._prepare import Rule, analysis_rows
from clcg_pipeline.analysis._suite import ESTIMATE_COLUMNS, StudyResults, run_suite

__all__ = [
    "ESTIMATE_COLUMNS",
    "GROUP_METRIC",
    "LEADERBOARD_COLUMNS",
    "LEADERBOARD_FILES",
    "NO_ESTIMATE",
    "NO_VALID_REPLICATE",
    "PAIR_STORE_FILE",
    "WITHHELD_FIELDS",
    "ClusterBootstrap",
    "ClusterCells",
    "ClusterTable",
    "FineTable",
    "PairStore",
    "PowerQuestion",
    "Replicates",
    "Rule",
    "StudyResults",
    "SuiteContext",
    "analysis_rows",
    "bootstrap_p",
    "cluster_table",
    "concat_cells",
    "draw_multiplicities",
    "drilldown",
    "estimate_file",
    "estimate_h1",
    "h1_core",
    "leaderboard",
    "mixed_h1",
    "pair_store_path",
    "percentile_ci",
    "power_from_pilot",
    "ratio",
    "read_pair_store",
    "read_scores",
    "reason_of",
    "replicate",
    "roles_of",
    "run_suite",
    "valid_replicates",
    "withheld_caveat",
    "withheld_for_too_few",
    "withheld_reason",
    "withhold_fields",
    "write_json",
    "write_leaderboard",
    "write_pair_store",
]
