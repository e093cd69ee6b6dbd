"""Two hosts, one PostgreSQL instance, one s3:// data folder, a faulty paid provider, a kill -9.

The end-to-end proof of issue 33's "one record of money", all on 127.0.0.1 and offline:

- a throwaway PostgreSQL server (initdb + pg_ctl, as ``bench/coord_postgres.py``): the Dagster
  instance's storage of both hosts, and so their call coordination (docs/DEPLOY.md, section 3);
- a moto S3 server holding the shared data folder ``s3://<bucket>/clcg`` (docs/DEPLOY.md, section 2);
- the fake OpenAI-compatible server (``calls.fake_server``, its own process) with 429s, 5xx,
  malformed bodies, answers slower than the timeout and a latency, billing each host (its API key);
- two "hosts", each with its config, a ``DAGSTER_HOME`` holding ``dagster.postgres.yaml``, a home,
  and its own hostname (a UTS namespace, as root), starting ``clcg run`` as a user does, at once,
  on a snapshot of the project taken at the start (others may be editing the checkout).

Host a's process group is killed with SIGKILL once the provider has answered ``--kill-after``
of its calls, and host a runs ``clcg run`` again to the end. Printed: the provider's bill (per
host), ``clcg query --named call_costs``' total, the coordination ledger's total and what it
charged dead sessions, each host's closing lines, the paid calls in the record (``call_spend``),
calls paid twice, and whether ledger <= bill <= ledger + charged at death. Exit 1 when a check fails.

    .venv/bin/python bench/two_hosts.py [--articles 30] [--languages en,pt,ka] [--kill-after 25]
        [--granularity] [--study-budget USD] [--keep]

It takes a few minutes on 2 busy cores (three Python processes start Dagster at once).
``--granularity`` adds the granularity tasks (one small document): slower, but the spend they
carry is the part ``call_costs`` once missed. Needs the PostgreSQL server binaries and the
``postgres`` and ``s3`` extras.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from synthetic_corpus import write_corpus  # bench/ is the script's folder: on sys.path

from clcg_pipeline_tests.pg_server import PgServer, bin_dir, free_port, running_postgres

ROOT = Path(__file__).resolve().parents[1]

KEY_ENV = "CLCG_TWO_HOSTS_KEY"
MARK_ENV = "CLCG_TWO_HOSTS_RUN"  # marks every host process (and its workers), for the cleanup
PRICE_IN, PRICE_OUT = 1.0, 4.0  # USD per million tokens, in models.yaml and in the server's bill
MODEL = "fake-gpt"
HOSTS = ("a", "b")
CLOSING = ("coordination", "Dagster runs", "paid by earlier runs", "study total", "budget", "interrupted")


# -- the provider: the fake server, billing per API key --------------------------------------


def serve(port: int, faults_json: str) -> None:
    """The fake server in this process, with a ``/_bill`` route: answered calls and USD per key."""
    import uvicorn
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

    from clcg_pipeline.calls.fake_server import App, Faults

    bill: dict[str, dict[str, Any]] = {}
    spans: list[tuple[float, float, str, int]] = []  # every request: arrival, departure, key, status

    class BillingApp(App):
        async def openai(self, request: Request) -> Response:  # type: ignore[override]
            key = (request.headers.get("authorization") or "").removeprefix("Bearer ")
            arrived = time.time()
            response = await super().openai(request)
            spans.append((arrived, time.time(), key, response.status_code))
            if response.status_code == 200:
                try:
                    usage = json.loads(bytes(response.body))["usage"]
                except (ValueError, KeyError, TypeError):  # malformed: no usage, nothing billable seen
                    return response
                line = bill.setdefault(key, {"calls": 0, "usd": 0.0, "ids": Counter(), "gone": 0})
                # Billed, but its client had hung up (killed): no cache entry, no ledger line.
                line["gone"] += int(await request.is_disconnected())
                line["calls"] += 1
                line["usd"] += (
                    usage["prompt_tokens"] * PRICE_IN + usage["completion_tokens"] * PRICE_OUT
                ) / 1e6
                line["ids"][request.headers.get("x-clcg-call-id", "-")] += 1
            return response

        async def bill(self, request: Request) -> Response:
            return JSONResponse(
                {"spans": spans, **{k: {**v, "ids": dict(v["ids"])} for k, v in bill.items()}}
            )

    app = BillingApp()
    app.state.faults = Faults(**json.loads(faults_json))
    app.state.rng.seed(app.state.faults.seed)
    app.app.add_route("/_bill", app.bill, methods=["GET"])
    uvicorn.run(app.app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off")


def _get(url: str) -> Any:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


@contextlib.contextmanager
def _process(cmd: list[str], port: int, what: str, log: Path) -> Iterator[None]:
    """A server process of this script, on ``port``, stopped after."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not _listening(port):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{what} did not start")
            time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


# -- the hosts ---------------------------------------------------------------------------------


@dataclass
class Setup:
    root: Path
    pg: PgServer
    s3_env: dict[str, str]
    data: str
    provider: str
    args: argparse.Namespace


def _edit(path: Path, change: Any) -> None:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _config(target: Path, setup: Setup) -> None:
    """The project's config cut small, with the paid model on the fake server."""
    args = setup.args
    shutil.copytree(ROOT / "assets_config", target)
    source, isos = (
        {"name": "synth", "kind": "jsonl", "path": str(setup.root / "corpus")},
        args.languages.split(","),
    )
    _edit(target / "sources.yaml", lambda d: d.update(sources=[source]))
    _edit(target / "languages.yaml",
          lambda d: d.update(languages=[x for x in d["languages"] if x["iso"] in isos]))  # fmt: skip

    def study(d: dict[str, Any]) -> None:
        d["bootstrap_replicates"] = 50
        d["items_per_level"] = 2
        d["sampling"].update(size=args.articles, stability_size=1)
        d["granularity"]["enabled"] = bool(args.granularity)
        if args.granularity:  # one small document: its tasks, judges and writers are all paid calls
            d["granularity"]["buckets"] = [dict(name="1K-2K", min_tokens=1000, max_tokens=2000, documents=1)]
        if args.study_budget is not None:
            d["budget_usd"] = args.study_budget

    _edit(target / "study.yaml", study)
    model = dict(id=MODEL, provider="openai_compatible", model="gpt-fake", base_url=f"{setup.provider}/v1",
                 api_key_env=KEY_ENV, knowledge_cutoff="2022-01-01", price_input_per_mtok=PRICE_IN,
                 price_output_per_mtok=PRICE_OUT, concurrency=args.concurrency, timeout_s=args.timeout,
                 max_attempts=6)  # fmt: skip
    _edit(target / "models.yaml", lambda d: d["models"].append(model))


def _host(setup: Setup, name: str) -> dict[str, str]:
    """Host ``name``'s folders and environment: its own Dagster home on the shared PostgreSQL."""
    base = setup.root / f"host-{name}"
    for sub in ("dagster_home", "home", "xdg", "work", "compute_logs"):
        (base / sub).mkdir(parents=True)
    shutil.copyfile(ROOT / "dagster.postgres.yaml", base / "dagster_home" / "dagster.yaml")
    _config(base / "config", setup)
    drop = ("CLCG_COORD_DIR", "CLCG_COORD_URL", "CLCG_ALLOW_LOCAL_COORD", "DAGSTER_HOME", "CLCG_DATA_DIR")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("AWS_")}
    return {
        **env, **setup.pg.env, **setup.s3_env, "DAGSTER_HOME": str(base / "dagster_home"),
        "CLCG_COMPUTE_LOG_DIR": str(base / "compute_logs"), "HOME": str(base / "home"),
        "XDG_CACHE_HOME": str(base / "xdg"), KEY_ENV: f"key-host-{name}-{uuid.uuid4().hex[:8]}",
        "COLUMNS": "400", MARK_ENV: str(setup.root),
        # The project as it was when the script started: other edits of the checkout meanwhile
        # do not reach the hosts' processes (the editable install's finder comes after this).
        "PYTHONPATH": str(setup.root / "project"),
    }  # fmt: skip


def _clcg_cmd(setup: Setup, name: str, *args: str) -> list[str]:
    clcg = [sys.executable, "-m", "clcg_pipeline.cli", *args]
    if os.geteuid() == 0 and shutil.which("unshare"):
        # A hostname of its own: the record's host column tells the two hosts apart.
        script = f'hostname two-hosts-{name} && exec "$@"'
        return ["unshare", "--uts", "sh", "-c", script, "sh", *clcg]
    return clcg


def start_run(setup: Setup, name: str, env: dict[str, str], attempt: int) -> subprocess.Popen[bytes]:
    base = setup.root / f"host-{name}"
    args = ["--config", str(base / "config"), "--data", setup.data, "--models", MODEL]
    cmd = _clcg_cmd(setup, name, "run", *args)
    with (base / f"run{attempt}.log").open("wb") as out:
        # A session of its own: kill -9 of its process group takes its workers with it.
        return subprocess.Popen(
            cmd, cwd=base / "work", env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def host_bill(setup: Setup, env: dict[str, str]) -> dict[str, Any]:
    return _get(f"{setup.provider}/_bill").get(env[KEY_ENV], {"calls": 0, "usd": 0.0, "ids": {}, "gone": 0})


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _environ(pid: int) -> bytes:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/environ").read_bytes()
    return b""


def marked_processes(root: Path, also: str = "") -> list[int]:
    """Live processes started by this script (its mark in their environment, and ``also``)."""
    needles = {f"{MARK_ENV}={root}".encode(), *([also.encode()] if also else [])}
    pids = [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit() and int(e.name) != os.getpid()]
    return [pid for pid in pids if needles <= set(_environ(pid).split(b"\0"))]


def kill_when_paid(setup: Setup, proc: subprocess.Popen[bytes], env: dict[str, str]) -> dict[str, Any] | None:
    """kill -9 of ``proc``'s group once the provider answered ``--kill-after`` of its calls."""
    started = time.monotonic()
    while proc.poll() is None and time.monotonic() < started + setup.args.timeout_run:
        paid = host_bill(setup, env)
        if paid["calls"] >= setup.args.kill_after:
            kill_group(proc)
            return {
                "at": time.time(),
                "after_s": round(time.monotonic() - started, 1),
                "bill_calls": paid["calls"],
            }
        time.sleep(0.2)
    print(f"WARNING: host a ended (exit {proc.poll()}) before it was answered {setup.args.kill_after} calls")
    return None


def run_hosts(setup: Setup) -> dict[str, Any]:
    """Both hosts at once; host a killed -9 after ``--kill-after`` answered calls, then rerun."""
    envs = {name: _host(setup, name) for name in HOSTS}
    procs = {name: start_run(setup, name, envs[name], 1) for name in HOSTS}
    deadline = time.monotonic() + setup.args.timeout_run
    killed = kill_when_paid(setup, procs["a"], envs["a"])
    time.sleep(1.0)
    orphans = marked_processes(setup.root, f"DAGSTER_HOME={setup.root / 'host-a' / 'dagster_home'}")
    for pid in orphans:  # kill -9 of the group should have taken every one: said below if not
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    final_a = start_run(setup, "a", envs["a"], 2)
    exits = {"a(rerun)": _wait(final_a, deadline), "b": _wait(procs["b"], deadline)}
    return {"envs": envs, "killed": killed, "orphans": orphans, "exits": exits}


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> int | str:
    try:
        return proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return "timed out (killed)"


# -- what the record, the ledger and the provider say -------------------------------------------


def clcg_query(setup: Setup, env: dict[str, str], *args: str) -> Any:
    """``clcg query ... --format json`` on host b, as a user types it; ``{"error": ...}`` when it fails."""
    base = setup.root / "host-b"
    cmd = [sys.executable, "-m", "clcg_pipeline.cli", "query", "--config", str(base / "config")]
    cmd += ["--data", setup.data, "--format", "json", *args]
    done = subprocess.run(cmd, cwd=base / "work", env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return {"error": (done.stdout + done.stderr)[-1500:]}
    return json.loads(done.stdout or "[]")


LEDGER_SQL = {  # the coordination ledger; offline models settle calls of $0, left out
    "spend": "SELECT count(*), count(DISTINCT call_id), coalesce(sum(usd), 0) FROM clcg_coord_spend "
    "WHERE usd > 0",
    "by_host": "SELECT host, count(*), round(sum(usd)::numeric, 6)::float FROM clcg_coord_spend "
    "WHERE usd > 0 GROUP BY 1",
    "left": "SELECT count(*), coalesce(sum(usd), 0), count(died_at) FROM clcg_coord_reservations",
    "twice": "SELECT count(*) FROM (SELECT call_id FROM clcg_coord_spend WHERE usd > 0 "
    "GROUP BY 1 HAVING count(*) > 1) t",
}


def ledger(pg: PgServer) -> dict[str, list[tuple[Any, ...]]]:
    import psycopg2

    conn = psycopg2.connect(host=pg.host, port=pg.port, user=pg.user, dbname=pg.dbname)
    try:
        with conn.cursor() as cur:
            return {name: (cur.execute(sql), cur.fetchall())[1] for name, sql in LEDGER_SQL.items()}
    finally:
        conn.close()


RECORD_SQL = (
    "SELECT coalesce(host, '-') AS host, step, calls_table, count(*) FILTER (WHERE paid) AS paid_calls, "
    "round(sum(paid_usd), 6) AS paid_usd, count(*) FILTER (WHERE cached) AS cached_rows, count(*) AS rows "
    f"FROM call_spend WHERE model = '{MODEL}' GROUP BY ALL ORDER BY ALL"
)
TWICE_SQL = (
    "SELECT call_id, count(*) AS payments, list(DISTINCT run) AS runs FROM call_spend "
    f"WHERE paid AND model = '{MODEL}' GROUP BY call_id HAVING count(*) > 1"
)
# What a closing line says was paid: by this command's runs, and by runs no closing line said.
SAID = re.compile(r"(?:costing|paid by earlier runs .*?:) \$([0-9.]+)")


def closing_lines(setup: Setup) -> dict[str, list[str]]:
    lines = {}
    for log in sorted(setup.root.glob("host-*/run*.log")):
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()
        said = [line.strip() for line in text if any(k in line for k in CLOSING)]
        lines[f"{log.parent.name}/{log.stem}"] = said or text[-5:]
    return lines


def said_usd(lines: dict[str, list[str]]) -> float:
    """What all closing lines together say was paid (each payment should be said once)."""
    return sum(float(m.group(1)) for ls in lines.values() for line in ls if (m := SAID.search(line)))


def print_provider(setup: Setup, outcome: dict[str, Any], bills: dict[str, Any]) -> None:
    stats, envs, killed = _get(f"{setup.provider}/_stats"), outcome["envs"], outcome["killed"]
    args = setup.args
    print("\n== two hosts, one PostgreSQL instance, s3:// data folder, host a killed -9 ==")
    print(
        f"{setup.data}; languages {args.languages}; {args.articles} articles; granularity {args.granularity}"
    )
    print(f"kill: {killed and {k: v for k, v in killed.items() if k != 'at'}}; exits: {outcome['exits']}")
    print(f"  processes of host a alive after the kill (then killed): {outcome['orphans'] or 'none'}")
    print(f"provider: {stats['total_requests']} requests, injected faults {stats['injected']}")
    names = {envs[h][KEY_ENV]: h for h in HOSTS}
    clipped = clipped_spans(bills["spans"], args.timeout)
    for label, spans in (("at the server", bills["spans"]), ("timeouts clipped", clipped)):
        n, at, by_key = peak_in_flight(spans)
        when = f" {at - killed['at']:+.1f} s from the kill" if killed and at else ""
        by_host = {names.get(k, k): v for k, v in by_key.items() if v}
        print(f"  peak in flight, {label}: {n} (limit {args.concurrency}){when}, by host {by_host}")
    for name in HOSTS:
        bill = bills[name]
        gone = f"{bill['gone']} answered after its client hung up"
        print(f"  bill host {name}: {bill['calls']} answered calls, ${bill['usd']:.6f}; {gone}")


def clipped_spans(spans: list[Any], timeout: float) -> list[Any]:
    """A slow answer's client gave up at its timeout (the server answers 504 after ``slow_s``)."""
    return [(a, min(b, a + timeout) if status == 504 else b, k, status) for a, b, k, status in spans]


def peak_in_flight(spans: list[Any]) -> tuple[int, float, dict[str, int]]:
    """The most requests in flight at once, when, and whose (a departure before an arrival at a tie)."""
    events = sorted([(a, 1, k) for a, _, k, _ in spans] + [(b, -1, k) for _, b, k, _ in spans])
    flying, best = Counter[str](), (0, 0.0, {})
    for t, step, key in events:
        flying[key] += step
        if flying.total() > best[0]:
            best = (flying.total(), t, dict(flying))
    return best


def print_view(costs: Any) -> tuple[int, float]:
    """``call_costs``' fake-gpt rows and their (paid calls, USD)."""
    if isinstance(costs, dict):
        print(f"call_costs FAILED: {costs['error']}")
        return -1, float("nan")
    mine = [r for r in costs if r["model"] == MODEL]
    print("clcg query --named call_costs (fake-gpt rows):")
    for r in mine:
        print(f"  {r}")
    calls, usd = sum(int(r["paid_calls"] or 0) for r in mine), sum(float(r["paid_usd"] or 0) for r in mine)
    print(f"  SPEND VIEW: {calls} paid calls, ${usd:.6f} (rounded to 4 places per row)")
    return calls, usd


def print_ledger(led: dict[str, list[tuple[Any, ...]]]) -> tuple[float, float]:
    """The ledger's lines and its (spent, charged at death)."""
    (n, distinct, spent), (left, charged, died) = led["spend"][0], led["left"][0]
    print(f"ledger: {n} paid settlements ({distinct} call ids, {led['twice'][0][0]} settled twice)")
    print(f"  by host: {led['by_host']}; reservations left {left} ({died} marked died_at)")
    print(f"  LEDGER: ${float(spent):.6f}; charged at death ${float(charged):.6f}")
    return float(spent), float(charged)


def print_record(record: Any, twice: Any) -> tuple[int, float, int]:
    """The record by host, step and table: (paid calls, USD, calls paid twice)."""
    print("the record (call_spend, fake-gpt) by host, step, table:")
    if isinstance(record, dict) or isinstance(twice, dict):
        print(f"  FAILED: {(record if isinstance(record, dict) else twice)['error']}")
        return -1, float("nan"), -1
    for r in record:
        print(f"  {r}")
    calls, usd = sum(int(r["paid_calls"]) for r in record), sum(float(r["paid_usd"] or 0) for r in record)
    print(f"  RECORD: {calls} paid calls, ${usd:.6f}; calls paid twice {len(twice)} {twice[:3]}")
    return calls, usd, len(twice)


def report(setup: Setup, outcome: dict[str, Any]) -> bool:
    """Prints every figure; True when every check holds."""
    envs = outcome["envs"]
    everything = _get(f"{setup.provider}/_bill")
    bills = {"spans": everything["spans"], **{h: host_bill(setup, envs[h]) for h in HOSTS}}
    clipped = clipped_spans(bills["spans"], setup.args.timeout)
    bill_calls, bill_usd = sum(bills[h]["calls"] for h in HOSTS), sum(bills[h]["usd"] for h in HOSTS)
    answered = Counter[str]()
    for h in HOSTS:
        answered.update(bills[h]["ids"])
    provider_twice = sum(1 for n in answered.values() if n > 1)
    print_provider(setup, outcome, bills)
    print(
        f"  BILL: {bill_calls} answered calls, ${bill_usd:.6f}; ids answered more than once: {provider_twice}"
    )
    view_calls, view_usd = print_view(clcg_query(setup, envs["b"], "--named", "call_costs"))
    spent, charged = print_ledger(ledger(setup.pg))
    lines = closing_lines(setup)
    print("closing lines:")
    for run, said in lines.items():
        for line in said:
            print(f"  [{run}] {line}")
    print(f"  said paid in all closing lines (this run + earlier runs): ${said_usd(lines):.4f}")
    record_calls, record_usd, record_twice = print_record(
        clcg_query(setup, envs["b"], RECORD_SQL), clcg_query(setup, envs["b"], TWICE_SQL)
    )
    checks = {
        "provider answered no call twice": provider_twice == 0,
        "record: no call paid twice": record_twice == 0,
        "ledger <= bill <= ledger + charged at death": spent - 1e-9 <= bill_usd <= spent + charged + 1e-9,
        "record's paid calls == bill's calls": record_calls == bill_calls,
        "record's USD == bill to the cent": abs(record_usd - bill_usd) < 0.005,
        "spend view's calls and USD == the bill's": view_calls == bill_calls
        and abs(view_usd - bill_usd) < 0.005,
        "closing lines say each payment once (sum == bill)": abs(said_usd(lines) - bill_usd) < 0.0005 * 4,
        "both hosts paid": all(bills[h]["calls"] > 0 for h in HOSTS),
        "both final runs exited 0": all(v == 0 for v in outcome["exits"].values()),
        "peak in flight (timeouts clipped) <= limit": peak_in_flight(clipped)[0] <= setup.args.concurrency,
    }
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    return all(checks.values())


# -- setup and teardown ------------------------------------------------------------------------


@contextlib.contextmanager
def moto(root: Path) -> Iterator[dict[str, str]]:
    port = free_port()
    cmd = [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)]
    with _process(cmd, port, "moto_server", root / "moto.log"):
        yield dict(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="testing",
                   AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")  # fmt: skip


@contextlib.contextmanager
def provider(root: Path, args: argparse.Namespace) -> Iterator[str]:
    from clcg_pipeline.calls.fake_server import Faults

    rates = dict(item.split("=") for item in args.faults.split(","))
    faults = Faults(
        latency_s=args.latency, p429=float(rates.get("429", 0)), p5xx=float(rates.get("5xx", 0)),
        ptimeout=float(rates.get("slow", 0)), pmalformed=float(rates.get("malformed", 0)),
        retry_after_s=0.05, slow_s=args.timeout + 1.0, seed=7,
    )  # fmt: skip
    port = free_port()
    cmd = [sys.executable, __file__, "--serve", str(port), json.dumps(asdict(faults))]
    with _process(cmd, port, "fake provider", root / "provider.log"):
        yield f"http://127.0.0.1:{port}"


def make_bucket(s3_env: dict[str, str]) -> str:
    import boto3

    name = f"clcg-two-hosts-{uuid.uuid4().hex[:8]}"
    keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
    boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL"], **keys).create_bucket(Bucket=name)
    return f"s3://{name}/clcg"


SNAPSHOT = ("clcg_pipeline", "sql", "assets_config", "dagster.yaml", "dagster.postgres.yaml")


def snapshot(root: Path) -> None:
    """A copy of the project the hosts run (others may be editing the checkout), checked to import."""
    target = root / "project"
    for attempt in range(5):
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        for name in SNAPSHOT:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(
                    source, target / name, ignore=shutil.ignore_patterns("__pycache__", "_project")
                )
            else:
                shutil.copyfile(source, target / name)
        check = "import clcg_pipeline.cli, clcg_pipeline.storage, clcg_pipeline.definitions"
        env = {**os.environ, "PYTHONPATH": str(target)}
        done = subprocess.run(
            [sys.executable, "-c", check], env=env, capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            return
        print(f"snapshot {attempt + 1}: the checkout does not import, again in 20 s: {done.stderr[-300:]}")
        time.sleep(20)
    raise RuntimeError("the checkout did not import in five tries")


def cleanup(root: Path) -> None:
    for pid in marked_processes(root):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def main() -> int:
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]), sys.argv[3])
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--articles", type=int, default=30, help="synthetic articles")
    parser.add_argument("--languages", default="en,pt,ka")
    parser.add_argument("--kill-after", type=int, default=25, help="host a's answered calls before kill -9")
    parser.add_argument("--granularity", action="store_true", help="granularity tasks on (one document)")
    parser.add_argument("--study-budget", type=float, default=None, help="budget_usd in study.yaml")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per answer")
    parser.add_argument("--timeout", type=float, default=2.0, help="the model's timeout_s")
    parser.add_argument("--faults", default="429=0.1,5xx=0.05,slow=0.02,malformed=0.02", help="shares")
    parser.add_argument("--timeout-run", type=float, default=1500, help="seconds for the whole run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs)")
    args = parser.parse_args()
    binaries = bin_dir()
    if binaries is None:
        print("skipped: no PostgreSQL server binaries (apt-get install postgresql)")
        return 0
    root = Path(tempfile.mkdtemp(prefix="clcg-two-hosts-"))
    try:
        snapshot(root)
        write_corpus(root / "corpus", articles=args.articles, languages=tuple(args.languages.split(",")))
        with (
            running_postgres("clcg_two_hosts", binaries) as pg,
            moto(root) as s3_env,
            provider(root, args) as url,
        ):
            setup = Setup(root, pg, s3_env, make_bucket(s3_env), url, args)
            outcome = run_hosts(setup)
            ok = report(setup, outcome)
            cleanup(root)
    finally:
        cleanup(root)
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
