"""bench/moto_server.py: the one S3 server (and server start) of the benches that use s3://
(two_hosts.py, runner_s3.py) serves S3 while open, is gone after, and a server that does not
start is said by name rather than waited on."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from clcg_pipeline_tests.conftest import PROJECT_ROOT
from clcg_pipeline_tests.pg_server import free_port


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "bench"))  # as the scripts find it
    import moto_server

    return moto_server


def test_moto_serves_s3_while_open_and_stops_after(servers: ModuleType, tmp_path: Path) -> None:
    import boto3

    with servers.moto_s3(tmp_path / "moto.log") as env:
        client = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region_name=env["AWS_DEFAULT_REGION"],
        )
        client.create_bucket(Bucket="clcg-bench")
        assert [b["Name"] for b in client.list_buckets()["Buckets"]] == ["clcg-bench"]
        port = int(env["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    assert not servers.listening(port)
    assert (tmp_path / "moto.log").exists()


def test_a_server_that_exits_at_once_is_said_by_name(servers: ModuleType) -> None:
    never = servers.serving([sys.executable, "-c", "pass"], free_port(), "the test server")
    with pytest.raises(RuntimeError, match="the test server did not start"), never:
        pass
