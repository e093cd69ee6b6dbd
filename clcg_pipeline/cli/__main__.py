"""``python -m clcg_pipeline.cli``: the ``clcg`` command (the tests run it this way)."""

import sys

from clcg_pipeline.cli import main

sys.exit(main())
