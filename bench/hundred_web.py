"""The hundred-model bench's ``dagster-webserver``: GraphQL latencies, sensors' ticks, a UI backfill.

Started as ``make dev`` starts it (the project's ``workspace.yaml``, so its code location has the
same name as the daemon's and a sensor stopped here is stopped for the daemon), on 127.0.0.1 on a
free port, over the study's instance, config and data folder, in its own process group, watched by
a guard (``dev.Guard``) that stops that group when the bench's driver dies, ``kill -9`` included.
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import yaml

from clcg_pipeline.orchestration import stop_process_group
from clcg_pipeline.orchestration.dev import Guard

ROOT = Path(__file__).resolve().parents[1]

# The UI's asset page (definition, partition counts, latest materialization), its partition
# matrix (every language x model partition's status), and a trivial query as the baseline.
_ASSET_PAGE = """query AssetPage($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) {
  __typename ... on AssetNode { id opName groupName description dependencyKeys { path }
    partitionDefinition { description dimensionTypes { name } }
    partitionStats { numMaterialized numPartitions numFailed numMaterializing }
    assetMaterializations(limit: 1) { runId timestamp partition } } } }"""
_PARTITION_MATRIX = """query Matrix($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) {
  __typename ... on AssetNode { assetPartitionStatuses {
    ... on MultiPartitionStatuses { primaryDimensionName ranges { primaryDimStartKey primaryDimEndKey
      secondaryDim { ... on DefaultPartitionStatuses { materializedPartitions failedPartitions
        materializingPartitions } } } }
    ... on DefaultPartitionStatuses { materializedPartitions failedPartitions } } } } }"""
_VERSION = "{ version }"
# Every sensor of the code location, its state's id (what the UI's toggle stops) and its ticks.
_SENSORS = """query Sensors($after: Float) { repositoriesOrError { __typename
  ... on RepositoryConnection { nodes { name location { name } sensors { name
    sensorState { id status ticks(afterTimestamp: $after, limit: 100000) { timestamp endTimestamp status } }
  } } } } }"""
_STOP_SENSOR = """mutation Stop($id: String) { stopSensor(id: $id) { __typename
  ... on StopSensorMutationResult { instigationState { status } } ... on PythonError { message } } }"""
# The asset graph's edges, as the UI draws it (to select an asset and everything downstream).
_ASSET_GRAPH = "{ assetNodes { assetKey { path } dependedByKeys { path } } }"
# The UI's "Materialize" of a selection over chosen partitions: an asset backfill.
_LAUNCH_BACKFILL = """mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) { __typename
    ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message }
    ... on InvalidSubsetError { message } ... on PartitionKeysNotFoundError { message } } }"""
_BACKFILL = """query Backfill($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename
  ... on PartitionBackfill { status numPartitions endTimestamp } ... on PythonError { message } } }"""
# Every request the bench sends, by name (a test validates them against Dagster's schema).
QUERIES = {
    "asset page": _ASSET_PAGE,
    "partition matrix": _PARTITION_MATRIX,
    "version": _VERSION,
    "sensors": _SENSORS,
    "stop sensor": _STOP_SENSOR,
    "asset graph": _ASSET_GRAPH,
    "launch backfill": _LAUNCH_BACKFILL,
    "backfill": _BACKFILL,
}
# A backfill's statuses once the daemon has nothing more to launch for it.
BACKFILL_DONE = frozenset({"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"})
_START_S = 300  # the most the webserver may take to answer
RESPONSES = {"key": {"path": ["predictions"]}}  # an asset of the responses op (language x model)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_workspace(path: Path) -> Path:
    """The project's ``workspace.yaml`` (``make dev``'s), its modules loaded from the project root."""
    doc = yaml.safe_load((ROOT / "workspace.yaml").read_text(encoding="utf-8"))
    for entry in doc["load_from"]:
        for target in entry.values():
            target["working_directory"] = str(ROOT)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


class Webserver:
    """``dagster-webserver`` on 127.0.0.1 over a study's instance, config and data folder."""

    def __init__(self, root: Path, env: dict[str, str], timeout: float) -> None:
        self.root, self.env, self.timeout = root, env, timeout
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/graphql"
        self.log = root / "webserver.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._guard: Guard | None = None
        self.client = httpx2.Client(timeout=timeout)

    def __enter__(self) -> Webserver:
        workspace = write_workspace(self.root / "workspace.yaml")
        with self.log.open("wb") as log:
            # Its own process group: stopping it stops its code server too.
            self._process = subprocess.Popen(
                self.command(workspace),
                cwd=self.root,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._guard = Guard(self._process.pid)
        return self

    def command(self, workspace: Path) -> list[str]:
        """``dagster-webserver`` over ``workspace`` on its port (a test's stand-in overrides it)."""
        server = Path(sys.executable).with_name("dagster-webserver")
        return [str(server), "-w", str(workspace), "-h", "127.0.0.1", "-p", str(self.port)]

    def __exit__(self, *_: object) -> None:
        self.client.close()
        if self._process is None:
            return
        try:
            stop_process_group(self._process)
        finally:
            if self._guard is not None:
                self._guard.wait()  # the group is gone: the guard is done at once

    def post(self, text: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``data`` of one GraphQL request; a GraphQL error fails loudly with the body."""
        response = self.client.post(self.url, json={"query": text, "variables": variables or {}})
        body = response.json()
        if response.status_code != 200 or body.get("errors"):
            raise RuntimeError(f"GraphQL request failed ({response.status_code}): {str(body)[:2000]}")
        return dict(body["data"])

    def query(self, text: str, variables: dict[str, Any] | None = None) -> float:
        """Seconds for one GraphQL query; a missing asset fails loudly."""
        start = time.perf_counter()
        data = self.post(text, variables)
        seconds = time.perf_counter() - start
        node = data.get("assetNodeOrError", {"__typename": "AssetNode"})
        if node["__typename"] != "AssetNode":
            raise RuntimeError(f"GraphQL query found no asset: {str(data)[:2000]}")
        return seconds

    def ready(self) -> float:
        """Seconds until the code location answers the asset page (start-up, code loaded)."""
        start = time.perf_counter()
        while True:
            if self._process is not None and self._process.poll() is not None:
                raise SystemExit(f"dagster-webserver exited:\n{self.log.read_text(errors='replace')[-3000:]}")
            try:
                self.query(_ASSET_PAGE, RESPONSES)
                return time.perf_counter() - start
            except httpx2.HTTPError:  # not listening yet; a query it refuses fails at once
                if time.perf_counter() - start > min(self.timeout, _START_S):
                    raise
                time.sleep(1.0)

    def latencies(self, repeats: int) -> dict[str, float]:
        """Start-up (to a first asset page), then each query's first and median latency."""
        queries = {"version": _VERSION, "asset page": _ASSET_PAGE, "partition matrix": _PARTITION_MATRIX}
        found = {"start-up": self.ready()}
        for name, text in queries.items():
            variables = None if text is _VERSION else RESPONSES
            found[f"{name} (first)"] = self.query(text, variables)
            found[name] = statistics.median(self.query(text, variables) for _ in range(repeats))
        return found

    def sensors(self, after: float | None = None) -> dict[str, dict[str, Any]]:
        """Each sensor's state (``id``, ``status``) and its ticks since ``after`` (epoch seconds)."""
        data = self.post(_SENSORS, {"after": after})["repositoriesOrError"]
        if data["__typename"] != "RepositoryConnection":
            raise RuntimeError(f"GraphQL repositoriesOrError: {str(data)[:2000]}")
        return {s["name"]: s["sensorState"] for repo in data["nodes"] for s in repo["sensors"]}

    def stop_sensor(self, name: str) -> None:
        """Stop a sensor as the UI's toggle does; fails loudly when it is not stopped."""
        state = self.sensors(after=time.time())[name]
        result = self.post(_STOP_SENSOR, {"id": state["id"]})["stopSensor"]
        stopped = (result.get("instigationState") or {}).get("status")
        if stopped != "STOPPED":
            raise RuntimeError(f"stopSensor {name}: {result}")

    def asset_edges(self) -> dict[str, list[str]]:
        """Each asset (its key as ``a/b``) and the assets that depend on it."""
        nodes = self.post(_ASSET_GRAPH)["assetNodes"]
        path = "/".join
        return {path(n["assetKey"]["path"]): [path(k["path"]) for k in n["dependedByKeys"]] for n in nodes}

    def launch_backfill(self, params: dict[str, Any]) -> str:
        """Launch an asset backfill (``launchPartitionBackfill``); its id, or a loud failure."""
        result = self.post(_LAUNCH_BACKFILL, {"params": params})["launchPartitionBackfill"]
        if result["__typename"] != "LaunchBackfillSuccess":
            raise RuntimeError(f"launchPartitionBackfill: {result}")
        return str(result["backfillId"])

    def backfill_status(self, backfill_id: str) -> str:
        found = self.post(_BACKFILL, {"id": backfill_id})["partitionBackfillOrError"]
        if found["__typename"] != "PartitionBackfill":
            raise RuntimeError(f"partitionBackfillOrError {backfill_id}: {found}")
        return str(found["status"])
