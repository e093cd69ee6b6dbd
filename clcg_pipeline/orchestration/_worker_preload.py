"""Imported once by the run launcher's fork server: every third-party module a run needs.

The project is imported to learn what it pulls in, then dropped from ``sys.modules``, so each
forked run worker imports the project's code as it is on disk when the run starts (a code
change needs no daemon restart) while Dagster, pandas, SciPy, statsmodels and DuckDB are
already loaded.
"""

import sys

# What a run worker imports besides the project: the run entry point, the instance's SQL
# storage (SQLAlchemy, Alembic) and the code-pointer loading machinery.
import dagster._cli.api
import dagster._core.definitions.reconstruct
import dagster._core.storage.event_log.sqlite
import dagster._core.storage.runs.sqlite
import dagster._core.storage.schedules.sqlite
import dagster._utils.test  # noqa: F401

import clcg_pipeline.definitions  # noqa: F401 - imported for its third-party dependencies

# The package itself stays (the import of this module needs its parent; it only holds the
# version), every submodule goes.
for _name in [name for name in sys.modules if name.startswith("clcg_pipeline.") and name != __name__]:
    del sys.modules[_name]
