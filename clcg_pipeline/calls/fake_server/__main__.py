"""``python -m clcg_pipeline.calls.fake_server --port N [--latency S]``."""

from clcg_pipeline.calls.fake_server import main

main()
