"""The hundred-model bench's other launchers: the daemon, and a UI backfill through GraphQL.

After ``clcg run`` added one model, the study gets one model more through each of:

* **the daemon** (``dagster-daemon run`` as ``make dev`` starts it, on the study's instance):
  the model is appended to ``models.yaml`` and nobody launches anything; its sensors add the
  partitions and the automation conditions run the stream, the responses and the analysis;
* **a UI backfill**: the automation sensors stopped through GraphQL (``stopSensor``, the UI's
  toggle), the model appended, and once the daemon's partition sensor has added it, the UI's
  "Materialize" of ``model_calls`` and everything downstream over the new model's partition
  (``launchPartitionBackfill``), followed until the backfill is done (the daemon runs it).

Each gives a :class:`Launch`: the wall from the edit of ``models.yaml`` to refreshed results,
the Dagster runs it took, the calls the fake server saw over its calling phase, the sensors'
tick times and the daemon's memory.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
from fake_model import bare_loop
from hundred_web import BACKFILL_DONE, Webserver

from clcg_pipeline.calls.fake_server import Faults, ServerProcess
from clcg_pipeline.partitions import MODEL_CALLS, MODEL_DIMENSION, response_key

# The sensors that launch runs by themselves (declarative automation); stopped for the backfill.
AUTOMATION_SENSORS = ("study_automation_sensor", "model_family_automation_sensor")
_TICK_S = 6.0  # a little over the automation sensors' interval (orchestration's 5 s)
_POLL_S = 0.5
# Between two looks at the instance while a launcher runs: each look is the bench's own load
# (SQLite queries, a GraphQL request the webserver answers) on the cores the launcher's stream
# needs, and the bare loop after it has none. The wall does not depend on it (``finished_at``).
FOLLOW_POLL_S = 2.0
_FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
_IN_FLIGHT = [status for status in dg.DagsterRunStatus if status not in _FINISHED]
_MIB = 1024 * 1024
GRAPHQL_S = 2.0  # the most the UI's asset page or partition matrix may take (issue 32)
CONCURRENCY = 32  # one model's in the bench's study: the bare loop's for one model's calls


@dataclass(frozen=True)
class Launch:
    """One launcher adding one model: what it cost, from the ``models.yaml`` edit to results."""

    name: str
    model: str
    wall: float  # the edit of models.yaml to refreshed results
    calls: int
    span: float  # the fake server's first request to last response
    runs: int  # Dagster runs on the instance for the new model
    partitions: int  # the new model's responses partitions
    ticks: dict[str, list[float]] = field(default_factory=dict)  # each sensor's tick durations
    peak_rss: dict[str, int] = field(default_factory=dict)  # bytes: "daemon", "daemon group"
    note: str = ""
    in_runs: float = 0.0  # seconds some Dagster run of it was running (the union of their spans)
    bodies: tuple[dict[str, Any], ...] = field(default=(), repr=False)  # its calls, as the server got them
    bare: float = float("nan")  # calls/s of the bare loop sending them right after (bare_rate)

    @property
    def rate(self) -> float:
        return self.calls / self.span if self.span else 0.0

    @property
    def overhead(self) -> float:
        """Seconds per partition outside the calling phase."""
        return (self.wall - self.span) / max(self.partitions, 1)


def busy_seconds(spans: Iterable[tuple[float, float]]) -> float:
    """Seconds covered by the union of ``(start, end)`` spans (runs overlap)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        total += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return total


def descendants(edges: dict[str, list[str]], root: str) -> list[str]:
    """``root`` and every asset downstream of it (the UI's ``root*`` selection), sorted."""
    if root not in edges:
        raise KeyError(f"asset {root!r} is not in the asset graph ({len(edges)} assets)")
    found, todo = {root}, [root]
    while todo:
        for child in edges.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return sorted(found)


def backfill_params(assets: Iterable[str], partition: str) -> dict[str, Any]:
    """``LaunchBackfillParams`` of the UI's Materialize of ``assets`` over one model's partition.

    The selected assets are partitioned differently (``model_calls`` by model, the family by
    language x model, the analysis not at all): Dagster anchors the backfill at the one the
    partition names (``model_calls``) and takes every downstream partition of it.
    """
    return {
        "assetSelection": [{"path": asset.split("/")} for asset in assets],
        "partitionNames": [partition],
        "title": f"bench: add {partition}",
    }


def tick_seconds(sensors: dict[str, dict[str, Any]]) -> dict[str, list[float]]:
    """Each sensor's finished ticks' durations (``endTimestamp - timestamp``), from ``sensors()``."""
    return {
        name: [t["endTimestamp"] - t["timestamp"] for t in state["ticks"] if t.get("endTimestamp")]
        for name, state in sorted(sensors.items())
    }


def proc_group(stat: str) -> tuple[int, int]:
    """(parent pid, process group) from a ``/proc/PID/stat`` line (its name may hold spaces)."""
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[2])


def _rss_kib(pid: int, key: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass  # gone between the listing and the read
    return 0


def _group_rss(pgid: int) -> int:
    """Bytes resident in the processes of group ``pgid`` (the daemon, its code server, its runs)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            in_group = proc_group((entry / "stat").read_text())[1] == pgid
        except (OSError, ValueError):
            continue
        total += _rss_kib(int(entry.name)) * 1024 if in_group else 0
    return total


class GroupMemory(threading.Thread):
    """Samples a process group's resident memory every half second; keeps the peak."""

    def __init__(self, pgid: int) -> None:
        super().__init__(daemon=True)
        self.pgid, self.peak = pgid, 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(_POLL_S):
            self.peak = max(self.peak, _group_rss(self.pgid))

    def take(self) -> dict[str, int]:
        """The peaks so far (the daemon's own is the kernel's high-water mark), then start over."""
        found = {"daemon": _rss_kib(self.pgid, "VmHWM") * 1024, "daemon group": self.peak}
        self.peak = 0
        return found

    def __enter__(self) -> GroupMemory:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop_event.set()
        self.join(timeout=5)


class Follow:
    """The study's instance (read through Dagster's public API) and fake server while a launcher runs.

    ``wait(what, ready, timeout)`` waits until ``ready()``, failing loudly (naming ``what``, with
    the daemon's log) on the timeout or when the daemon is gone: ``LocalDaemon.wait_for``.
    ``latency`` is the fake server's per call.
    """

    def __init__(
        self,
        instance: dg.DagsterInstance,
        isos: list[str],
        server: ServerProcess,
        latency: float,
        wait: Callable[[str, Callable[[], bool], float], float],
    ) -> None:
        self.instance, self.isos, self.wait = instance, isos, wait
        self.server, self.latency = server, latency

    def runs(self) -> int:
        return self.instance.get_runs_count()

    def in_runs(self, since: float) -> float:
        """Seconds a run created after ``since`` (epoch) was running: the rest of a wall is waiting."""
        created = datetime.fromtimestamp(since, tz=UTC)
        records = self.instance.get_run_records(dg.RunsFilter(created_after=created))
        return busy_seconds((r.start_time, r.end_time) for r in records if r.start_time and r.end_time)

    def in_flight(self) -> int:
        return len(self.instance.get_run_records(dg.RunsFilter(statuses=_IN_FLIGHT)))

    def finished_at(self, since: float) -> float:
        """Epoch seconds the last run created after ``since`` ended (0 when none has): the moment
        the refresh was done, whenever the bench looked."""
        created = datetime.fromtimestamp(since, tz=UTC)
        records = self.instance.get_run_records(dg.RunsFilter(created_after=created))
        return max((r.end_time for r in records if r.end_time), default=0.0)

    def latest(self, asset: str, partition: str | None = None) -> float:
        records = self.instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None
            ),
            limit=1,
        ).records
        return records[0].timestamp if records else 0.0

    def refreshed(self, model: str) -> bool:
        """Every language of ``model`` scored, the analysis and catalog rebuilt after, nothing running.

        Runs in flight first: one query while the launcher's runs call, not one per language."""
        if self.in_flight():
            return False
        scored = [self.latest("scores", str(response_key(iso, model))) for iso in self.isos]
        if not all(scored):
            return False
        return min(self.latest("study_results"), self.latest("duckdb_catalog")) > max(scored)


def settle(follow: Follow, web: Webserver, since: float, timeout: float) -> int:
    """Wait until every running sensor has ticked since ``since`` and nothing runs, twice a
    tick apart; the runs launched meanwhile (after ``clcg run``, the daemon should launch none)."""
    before = follow.runs()

    def quiet() -> bool:
        sensors = web.sensors(after=since).values()
        ticked = all(s["ticks"] for s in sensors if s["status"] == "RUNNING")
        return ticked and not follow.in_flight()

    for _ in range(2):
        follow.wait("a tick of every sensor and no run in flight", quiet, timeout)
        time.sleep(_TICK_S)
    return follow.runs() - before


def _measure(name: str, model: str, follow: Follow, edit: Callable[[], None]) -> tuple[int, float, float]:
    """Reset the fake server's counts and edit ``models.yaml``: (runs before, epoch, monotonic)."""
    follow.server.set_faults(Faults(latency_s=follow.latency))
    runs = follow.runs()
    print(f"{name}: adding {model}", flush=True)
    epoch, started = time.time(), time.monotonic()
    edit()
    return runs, epoch, started


def _launch(name: str, model: str, follow: Follow, since: tuple[int, float, float]) -> Launch:
    runs, epoch, started = since
    # To the last run's end, not to the look that saw it (the bench looks every FOLLOW_POLL_S).
    ended = follow.finished_at(epoch)
    wall = ended - epoch if ended else time.monotonic() - started
    stats = follow.server.stats()
    calls, span = int(stats["total_requests"]), float(stats["calling_span_s"] or 0.0)
    runs, in_runs = follow.runs() - runs, follow.in_runs(epoch)
    # As it happens: a bench stopped later still has this launcher's figures.
    print(
        f"{name}: {model} refreshed in {wall:.1f} s ({in_runs:.1f} s in {runs} runs), {calls} calls",
        flush=True,
    )
    bodies = tuple(follow.server.bodies())
    print(f"{name}: calling phase: {phase_profile(stats)}; {load_average()}", flush=True)
    # Right after its calls, the daemon still up: the baseline sees the same machine load.
    bare = bare_rate(follow.server, bodies, CONCURRENCY, follow.latency) if calls else 0.0
    found = Launch(name, model, wall, calls, span, runs, len(follow.isos), in_runs=in_runs, bodies=bodies)
    return replace(found, bare=bare)


def phase_profile(stats: dict[str, Any]) -> str:
    """The calling phase as the fake server saw it: calls in flight at each arrival, and the
    seconds with none in flight (a drain: a partition's build, a run starting, a retry)."""
    events = sorted([(t, 1) for t in stats["arrivals_s"]] + [(t, -1) for t in stats["departures_s"]])
    level, last, idle, longest = 0, 0.0, 0.0, 0.0
    for at, step in events:
        if level == 0:
            idle, longest = idle + at - last, max(longest, at - last)
        level, last = level + step, at
    loads = stats["in_flight_at_arrival"] or [0]
    return (
        f"{stats['total_requests']} calls in {stats['calling_span_s']:.2f} s, in flight at an arrival: "
        f"median {statistics.median(loads):.0f}, max {max(loads)}; none in flight {idle:.2f} s "
        f"(longest {longest:.2f} s)"
    )


def load_average() -> str:
    """The machine's load average: a ratio to the bare loop is read beside it (shared cores)."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min)"


def bare_rate(
    server: ServerProcess, bodies: Iterable[dict[str, Any]], concurrency: int, latency: float
) -> float:
    """Calls/s of a bare asyncio loop sending ``bodies`` at ``concurrency``, over the same phase
    as a launcher's: the fake server's first request to its last response.

    The launcher's own calls, as the server received them: the same number, the same prompts
    (the server reads and counts the tokens of each), the same concurrency. The loop's own
    start-up (its client, before the first request) is outside the phase, as the stream's is.
    """
    sent = [dict(body) for body in bodies] or [
        {"model": "m", "messages": [{"role": "user", "content": "1. Q?"}]}
    ]
    server.set_faults(Faults(latency_s=latency))  # resets the counts
    asyncio.run(bare_loop(server.url, sent, concurrency=concurrency))
    stats = server.stats()
    return int(stats["total_requests"]) / float(stats["calling_span_s"])


def daemon_launch(
    follow: Follow, web: Webserver, model: str, edit: Callable[[], None], timeout: float
) -> Launch:
    """The model appended to models.yaml while the daemon runs; nobody launches anything."""
    since = _measure("daemon", model, follow, edit)
    follow.wait(f"{model} refreshed by the daemon", lambda: follow.refreshed(model), timeout)
    found = _launch("daemon", model, follow, since)
    return replace(found, ticks=tick_seconds(web.sensors(after=since[1])))


def stop_automation(web: Webserver, tries: int = 5) -> int:
    """Stop the automation sensors and check, two ticks later, that they stayed stopped; the
    stops it took beyond one each (a tick under way when its sensor stops may still launch a run,
    and may write its sensor's state back)."""
    stops = 0
    for _ in range(tries):
        states = web.sensors(after=time.time())
        running = [name for name in AUTOMATION_SENSORS if states[name]["status"] != "STOPPED"]
        if not running:
            return stops - len(AUTOMATION_SENSORS)
        for name in running:
            web.stop_sensor(name)
        stops += len(running)
        time.sleep(2 * _TICK_S)
    raise RuntimeError(f"{running} not stopped after {tries} tries of stopSensor")


def backfill_launch(
    follow: Follow, web: Webserver, model: str, edit: Callable[[], None], timeout: float
) -> Launch:
    """The automation sensors stopped, the model appended, its partition backfilled from the UI."""
    restops = stop_automation(web)
    follow.wait("no run in flight", lambda: not follow.in_flight(), timeout)
    since = _measure("UI backfill", model, follow, edit)
    follow.wait(
        f"{model} among the model partitions (the daemon's partition sensor)",
        lambda: model in follow.instance.get_dynamic_partitions(MODEL_DIMENSION),
        timeout,
    )
    backfill = web.launch_backfill(backfill_params(descendants(web.asset_edges(), MODEL_CALLS), model))
    status: list[str] = []

    def done() -> bool:
        if follow.in_flight():  # a backfill with a run in flight is not done: no GraphQL request
            return False
        status[:] = [web.backfill_status(backfill)]
        return status[0] in BACKFILL_DONE

    follow.wait(f"backfill {backfill} done", done, timeout)
    if status[0] == "COMPLETED_SUCCESS":
        follow.wait(f"{model} refreshed by the backfill", lambda: follow.refreshed(model), 60)
    found = _launch("UI backfill", model, follow, since)
    note = status[0] + (f" (sensors stopped again: {restops})" if restops else "")
    return replace(found, ticks=tick_seconds(web.sensors(after=since[1])), note=note)


def with_memory(launch: Launch, memory: GroupMemory) -> Launch:
    return replace(launch, peak_rss=memory.take())


def _ticks(launch: Launch) -> str:
    every = [s for seconds in launch.ticks.values() for s in seconds]
    if not every:
        return "-"
    return f"{statistics.median(every):.2f} / {max(every):.2f} s"


def _mib(launch: Launch, key: str) -> str:
    return f"{launch.peak_rss[key] / _MIB:.0f} MiB" if key in launch.peak_rss else "-"


def _ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}" if baseline else "n/a"


def launcher_rows(launches: list[Launch], bares: list[float]) -> list[list[str]]:
    """The launchers side by side: one row per figure, one column per launcher.

    ``bares``: the bare loop's calls/s for each launcher's calls at one model's concurrency.
    """
    rows = [
        ["launcher", *(launch.name for launch in launches)],
        ["model added", *(launch.model for launch in launches)],
        ["Dagster runs for the new model", *(str(launch.runs) for launch in launches)],
        ["models.yaml edit -> refreshed results", *(f"{launch.wall:.1f} s" for launch in launches)],
        ["  of it, some Dagster run running", *(f"{x.in_runs:.1f} s" for x in launches)],
        [
            "  its calls in a bare loop (the floor)",
            *(f"{x.calls / b:.1f} s" if b else "-" for x, b in zip(launches, bares, strict=True)),
        ],
        ["calls (calling phase)", *(f"{x.calls} in {x.span:.1f} s" for x in launches)],
        ["calls/s", *(f"{x.rate:.1f}" for x in launches)],
        ["bare loop calls/s (same calls)", *(f"{b:.1f}" for b in bares)],
        ["calls/s / bare loop (>= 0.9)", *(_ratio(x.rate, b) for x, b in zip(launches, bares, strict=True))],
        ["overhead per partition", *(f"{x.overhead:.2f} s" for x in launches)],
        ["sensor ticks, median / max", *(_ticks(x) for x in launches)],
        ["daemon peak RSS (its own, since start)", *(_mib(x, "daemon") for x in launches)],
        ["daemon group peak RSS (code server, runs)", *(_mib(x, "daemon group") for x in launches)],
        ["backfill status", *(x.note or "-" for x in launches)],
    ]
    return rows


def _tick_lines(launches: list[Launch]) -> list[str]:
    """Each sensor's ticks per launcher: count, median and max seconds."""
    lines = []
    for launch in launches:
        for sensor, seconds in launch.ticks.items():
            if seconds:
                median, worst = statistics.median(seconds), max(seconds)
                count = f"{len(seconds)} ticks"
                lines.append(
                    f"    {launch.name}: {sensor}: {count}, median {median:.2f} s, max {worst:.2f} s"
                )
    return lines


def launcher_lines(launches: list[Launch], bares: list[float], on_start: int | None) -> list[str]:
    """The launchers' table, each sensor's ticks, and what the daemon launched on its start."""
    rows = launcher_rows(launches, bares)
    lines = [f"  {r[0]:<44}" + "".join(f" {cell:>21}" for cell in r[1:]) for r in rows]
    lines += _tick_lines(launches)
    if on_start is not None:
        lines.append(f"  runs the daemon launched on starting after clcg run: {on_start}")
    return lines


def launcher_misses(
    launches: list[Launch], bares: list[float], web: dict[str, float], on_start: int
) -> list[str]:
    """The daemon's and the backfill's calls/s under 0.9 of the bare loop (``clcg run``'s is the
    refresh's, reported with the first run's), a daemon that ran work on a study ``clcg run`` had
    built, a backfill that did not succeed, a UI query of 2 s or more."""
    misses = [
        f"{launch.name}'s calls/s {launch.rate / bare:.2f} of the bare loop < 0.9"
        for launch, bare in zip(launches, bares, strict=True)
        if launch.name != "clcg run" and bare and launch.rate / bare < 0.9
    ]
    if on_start:
        misses.append(f"the daemon launched {on_start} runs on a study clcg run had built")
    misses += [
        f"the UI backfill ended {x.note}"
        for x in launches
        if x.note and not x.note.startswith("COMPLETED_SUCCESS")
    ]
    slow = [name for name in ("asset page", "partition matrix") if web.get(name, 0.0) >= GRAPHQL_S]
    return misses + [f"GraphQL {name}: {web[name]:.1f} s >= {GRAPHQL_S:.0f} s" for name in slow]
