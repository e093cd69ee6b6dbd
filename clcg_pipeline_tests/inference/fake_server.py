"""The fake provider server moved to :mod:`clcg_pipeline.calls.fake_server`; kept as an alias."""

from clcg_pipeline.calls.fake_server import CALL_ID_HEADER, FakeServer, Faults, ServerProcess

__all__ = ["CALL_ID_HEADER", "FakeServer", "Faults", "ServerProcess"]
