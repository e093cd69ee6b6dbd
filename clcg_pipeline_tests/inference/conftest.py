"""The responses stage's tests use the calls tests' fake server and key fixtures."""

from clcg_pipeline_tests.calls.conftest import fake_key, server

__all__ = ["fake_key", "server"]
