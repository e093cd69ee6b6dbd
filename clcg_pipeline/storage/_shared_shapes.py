"""The pieces every section of ``study_results.json`` is built from: an estimate, an interval,
a Benjamini-Hochberg family."""

from __future__ import annotations

from pydantic import ConfigDict
from typing_extensions import TypedDict

# The config a whole document is validated under (storage/_document_validation.py): set on each
# top shape, it holds for every shape nested in it. ``extra="forbid"``: a key no shape declares
# (a renamed or misspelt field) is an error; ``strict``: no "12" for an int, no True for a number.
DOCUMENT_CONFIG = ConfigDict(extra="forbid", strict=True)

# ---------------------------------------------------------------------------------------------
# Shared pieces


class Estimate(TypedDict, total=False):
    """One estimate with its interval, p value, counts and the reasons not to trust it."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p: float | None
    p_value: float | None
    p_adj: float | None
    p_bound: bool
    n: int | None
    n_articles: int | None
    identifiable: bool
    reason: str | None
    valid_replicates: int | None
    flags: list[str] | str | None
    converged: bool
    status: str
    warnings: list[str] | str
    metric: str
    sided: str


class Interval(TypedDict, total=False):
    """An estimate as the studies write it: a value, its interval and whether it is identifiable.

    Rows whose value has another name (``gap``, ``drop``, ``kappa`` ...) share the other fields.
    """

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n: int | None
    n_articles: int | None
    n_documents: int | None
    valid_replicates: int | None
    p_bound: bool
    identifiable: bool
    reason: str | None
    flags: list[str]
    status: str


class BhTest(TypedDict, total=False):
    """One test of a Benjamini-Hochberg family; ``None`` where its p is not available."""

    test: str
    p: float | None
    p_adj: float | None
    reject: bool | None


class BhFamily(TypedDict, total=False):
    """A Benjamini-Hochberg family (analysis/_stats.py ``benjamini_hochberg``): the top-level
    ``multiplicity`` and each gap's family in ``model_contrasts.multiplicity``. There, once the
    pairs move to their table, ``tests`` and ``not_available`` become the counts ``rejected`` and
    ``n_not_available`` and ``tests_in`` names the table (results/_merge.py)."""

    method: str
    alpha: float
    m: int  # the tests with a p
    planned: int  # every test of the family
    not_available: list[str]
    tests: list[BhTest]
    rejected: int
    n_not_available: int
    tests_in: str
