"""Publishable releases of a finished study: source text replaced by content hashes, human
validation deidentified, a manifest and a data card; and the reconstruction from a local corpus.

Above ``storage``, ``config`` and ``corpus`` (it reads the data folder and the corpus), beside
``orchestration``; the CLI's ``release`` and ``reconstruct`` commands call it (``cli/_release.py``).
"""

from clcg_pipeline.release._build import (
    EXCLUDED,
    FORMAT,
    INDEX,
    MANIFEST,
    ReleaseError,
    ReleaseSummary,
    build_release,
)
from clcg_pipeline.release._leaks import scan_release
from clcg_pipeline.release._people import pseudonym
from clcg_pipeline.release._reconstruct import ReconstructSummary, reconstruct_release
from clcg_pipeline.release._texts import HOMES, MARKER, collect_texts, text_hash

__all__ = [
    "EXCLUDED",
    "FORMAT",
    "HOMES",
    "INDEX",
    "MANIFEST",
    "MARKER",
    "ReconstructSummary",
    "ReleaseError",
    "ReleaseSummary",
    "build_release",
    "collect_texts",
    "pseudonym",
    "reconstruct_release",
    "scan_release",
    "text_hash",
]
