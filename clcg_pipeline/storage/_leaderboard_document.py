"""The shape of ``leaderboard.json`` (one row per model, beside ``study_results.json``): one
pydantic model, checked when the leaderboard is written and when it is read back (issue 34).

Here, below ``analysis`` (which builds the leaderboard) and ``results`` (whose asset writes it
and reads it back), so that both use the one shape. Unknown keys and values of another type are
refused (``extra="forbid"``, ``strict``), with the file and the field named
(``validate_model``, ``read_model``).
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, field_validator

from clcg_pipeline.storage._document_validation import read_model


class _Shape(BaseModel):
    # Strict (no "2" for a rank), closed (no key the shape does not declare), read-only.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class LeaderboardRow(_Shape):
    """One model: its gaps with intervals, English score, ranks with intervals, tie group, and
    whether its H1 micro is identifiable (an empty value is withheld or not computed)."""

    model: str
    h1_micro: float | None
    h1_micro_ci_low: float | None
    h1_micro_ci_high: float | None
    macro_net: float | None
    macro_net_ci_low: float | None
    macro_net_ci_high: float | None
    english_score: float | None
    rank: float | None
    rank_ci_low: float | None
    rank_ci_high: float | None
    tie_group: int | None
    rank_net: float | None
    rank_net_ci_low: float | None
    rank_net_ci_high: float | None
    n_models: int | None
    n_articles: int | None
    identifiable: bool
    reason: str | None  # why the row's intervals are withheld (None when they are shown)
    # Whether the model's answers are simulated (``settings.models[].simulated``), as the terminal
    # and the report mark it; None in a leaderboard written before the column existed.
    simulated: bool | None = None


#: The leaderboard's columns, in order (``leaderboard.csv`` and ``leaderboard.json``'s ``models``).
LEADERBOARD_ROW_FIELDS: list[str] = list(LeaderboardRow.model_fields)

#: The columns of a leaderboard written before ``simulated`` was added (still read back).
_COLUMNS_BEFORE_SIMULATED: list[str] = [f for f in LEADERBOARD_ROW_FIELDS if f != "simulated"]


class LeaderboardTies(_Shape):
    """The tie groups' rule, gap and level, and the groups; or why there are none (said once)."""

    gap: str | None = None
    level: float | None = None
    rule: str | None = None
    groups: list[list[str]] | None = None
    reason: str | None = None


class LeaderboardDocument(_Shape):
    """``leaderboard.json``: the columns, the model contrasts' status and ranking rule, the tie
    groups, and one row per model by rank."""

    columns: list[str]
    status: str
    ranking: str | None
    tie_groups: LeaderboardTies
    models: list[LeaderboardRow]

    @field_validator("columns")
    @classmethod
    def _the_rows_columns(cls, columns: list[str]) -> list[str]:
        if columns not in (LEADERBOARD_ROW_FIELDS, _COLUMNS_BEFORE_SIMULATED):
            raise ValueError(f"the columns must be {LEADERBOARD_ROW_FIELDS}")
        return columns


def read_leaderboard(path: str | os.PathLike[str]) -> LeaderboardDocument:
    """``leaderboard.json`` read back and checked against its shape (``DocumentError`` naming the
    file and the field when it does not fit)."""
    return read_model(LeaderboardDocument, path)
