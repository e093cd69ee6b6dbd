"""The one ``Definitions`` object Dagster loads (``dagster dev``, the daemon). Nothing else here."""

from __future__ import annotations

import dagster as dg

from clcg_pipeline.orchestration import build_definitions


@dg.definitions
def defs() -> dg.Definitions:
    # Loaded lazily by Dagster (dagster dev / the daemon), so reading the config happens
    # when the code location loads, not at import.
    return build_definitions()
