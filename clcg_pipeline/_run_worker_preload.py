"""Imported once by the run launcher's fork server: every third-party module a run needs.

The project is imported to learn what it pulls in, then dropped from ``sys.modules``, so each
forked run worker imports the project's code as it is on disk when the run starts (a code
change needs no daemon restart) while Dagster, pandas, SciPy, statsmodels and DuckDB are
already loaded.

It sits at the package root, not in ``orchestration`` with the launcher, because of that
purge: the import system needs the parent package of this module in ``sys.modules`` once the
module has run, and only the root package (which holds just the version) may stay there.
Inside ``orchestration`` the stale package would stay, or the import fails and the fork
server dies (every daemon-launched run then fails with ``EOFError``).
"""

import importlib
import sys

import clcg_pipeline.definitions  # noqa: F401 - imported for its third-party dependencies
from clcg_pipeline.orchestration import WORKER_PRELOAD_MODULES

for _module in WORKER_PRELOAD_MODULES:
    importlib.import_module(_module)

# The package itself stays (the import of this module needs its parent; it only holds the
# version), every submodule goes.
for _name in [name for name in sys.modules if name.startswith("clcg_pipeline.") and name != __name__]:
    del sys.modules[_name]
