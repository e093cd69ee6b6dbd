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
        [--granularity] [--study-budget USD] [--faults 429=0.1,5xx=0.05,slow=0.02,malformed=0.02]
        [--latency S] [--misconfigured no-pg-yaml|coord-dir] [--keep]

``--misconfigured`` adds a host c on the same ``s3://`` folder, started with the two, whose
``DAGSTER_HOME`` holds the SQLite ``dagster.yaml`` or which sets ``CLCG_COORD_DIR``: it must be
refused before any call with one line naming the fix, then (``CLCG_ALLOW_LOCAL_COORD=1``, the
opt-in) run once more at the end and say it coordinates through local file locks. Always checked
(``two_hosts_checks.py``): one ``coordination:`` line per run, the ``clcg/coordination`` tag on
every Dagster run, no traceback or ``PreconditionFailed`` in the hosts' output (two hosts writing
one partition on S3); with ``--study-budget``, the bill of hosts a and b (the PostgreSQL ledger's)
never above it, nor host c's own (it counts its calls only), and a budget that stopped calls
said once (which budget, spent, calls left, how to resume). Without a study budget nothing
is reserved, so an answer the killed host received but had not cached is billed and in no record:
the script prints that gap (``bill - record``) and its checks of the bill then fail, as they should.
An answer the server sent after its client hung up (killed) reaches no cache, and the rerun
pays for that call again: host a's intent log (kept on host a, its cache being remote) puts the
killed attempt in the record as a ``lost_at_kill`` row, so the record is read on host a and
compared with the whole bill, by call id (``two_hosts_checks.payments``: a lost row and the
rerun's payment are two charges the provider billed, not a call paid twice; a lost row the
provider never billed, an attempt that got an error, is an estimate left out and printed).
The concurrency limit is checked on the requests of a and b as
their clients lived them: each ends when the server saw its client hang up (a timeout, a kill).

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
import shutil
import signal
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
from moto_server import moto_s3, serving  # bench/ is the script's folder: on sys.path
from synthetic_corpus import write_corpus
from two_hosts_checks import (
    MISCONFIGURED,
    MODEL,
    PAYMENTS_SQL,
    RECORD_SQL,
    SKIPPED_SQL,
    answered_twice,
    budget_checks,
    budget_lines,
    clipped_spans,
    coordination_lines,
    crashes,
    dead_key,
    ledger,
    misconfigure,
    of_keys,
    payments,
    peak_in_flight,
    print_ledger,
    print_record,
    print_view,
    refusal,
    refusal_checks,
    run_tags,
    said_usd,
    tag_counts,
)
from two_hosts_provider import PRICE_IN, PRICE_OUT, serve  # the fake provider, billing

from clcg_pipeline_tests.pg_server import PgServer, bin_dir, free_port, running_postgres

ROOT = Path(__file__).resolve().parents[1]

KEY_ENV = "CLCG_TWO_HOSTS_KEY"
MARK_ENV = "CLCG_TWO_HOSTS_RUN"  # marks every host process (and its workers), for the cleanup
HOSTS = ("a", "b")
CLOSING = ("coordination", "Dagster runs", "paid by earlier runs", "study total", "budget", "interrupted")


def _get(url: str) -> Any:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


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
    empty = {"calls": 0, "usd": 0.0, "ids": {}, "gone": 0, "gone_ids": {}}
    return _get(f"{setup.provider}/_bill").get(env[KEY_ENV], empty)


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
    """Both hosts at once; host a killed -9 after ``--kill-after`` answered calls, then rerun.
    With ``--misconfigured``, host c (misconfigured) starts with them and is refused."""
    envs = {name: _host(setup, name) for name in HOSTS}
    procs = {name: start_run(setup, name, envs[name], 1) for name in HOSTS}
    if setup.args.misconfigured:
        base = setup.root / "host-c"
        envs["c"] = misconfigure(_host(setup, "c"), setup.args.misconfigured, base, ROOT / "dagster.yaml")
        procs["c"] = start_run(setup, "c", envs["c"], 1)
    deadline = time.monotonic() + setup.args.timeout_run
    killed = kill_when_paid(setup, procs["a"], envs["a"])
    time.sleep(1.0)
    orphans = marked_processes(setup.root, f"DAGSTER_HOME={setup.root / 'host-a' / 'dagster_home'}")
    for pid in orphans:  # kill -9 of the group should have taken every one: said below if not
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    final_a = start_run(setup, "a", envs["a"], 2)
    exits = {"a(rerun)": _wait(final_a, deadline), "b": _wait(procs["b"], deadline)}
    found = {"envs": envs, "killed": killed, "orphans": orphans, "exits": exits}
    if "c" in procs:  # refused; then the same host opting in to local file locks, on purpose
        found["refused"] = refusal(setup.root / "host-c" / "run1.log", _wait(procs["c"], deadline),
                                   host_bill(setup, envs["c"])["calls"])  # fmt: skip
        envs["c"] = {**envs["c"], "CLCG_ALLOW_LOCAL_COORD": "1"}
        opted = _wait(start_run(setup, "c", envs["c"], 2), deadline)
        lines = coordination_lines({"c": setup.root / "host-c" / "run2.log"})["c"]
        found["opted"] = {"exit": opted, "coordination": lines, "paid": host_bill(setup, envs["c"])["calls"]}
    return found


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> int | str:
    try:
        return proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return "timed out (killed)"


# -- what the record, the ledger and the provider say -------------------------------------------


def clcg_query(setup: Setup, env: dict[str, str], *args: str) -> Any:
    """``clcg query ... --format json`` in ``env`` (a host's), as a user types it; ``{"error": ...}``
    when it fails."""
    base = setup.root / "host-b"
    cmd = [sys.executable, "-m", "clcg_pipeline.cli", "query", "--config", str(base / "config")]
    cmd += ["--data", setup.data, "--format", "json", *args]
    done = subprocess.run(cmd, cwd=base / "work", env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return {"error": (done.stdout + done.stderr)[-1500:]}
    return json.loads(done.stdout or "[]")


def catalog_on(setup: Setup, env: dict[str, str]) -> str | None:
    """The catalog rebuilt on the host of ``env`` (as its ``clcg run`` does at its end): the
    last host to build it decides whose intent logs its ``call_cache_payments`` read, and the
    killed host's are on that host alone. None when it was rebuilt, else the error."""
    code = "import sys; from clcg_pipeline.storage import build_catalog; build_catalog(sys.argv[1])"
    base = setup.root / "host-a"
    cmd = [sys.executable, "-c", code, setup.data]
    done = subprocess.run(cmd, cwd=base / "work", env=env, capture_output=True, text=True, timeout=300)
    return None if done.returncode == 0 else (done.stdout + done.stderr)[-1500:]


def closing_lines(setup: Setup) -> dict[str, list[str]]:
    lines = {}
    for log in sorted(setup.root.glob("host-*/run*.log")):
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()
        said = [line.strip() for line in text if any(k in line for k in CLOSING)]
        lines[f"{log.parent.name}/{log.stem}"] = said or text[-5:]
    return lines


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
    names = {env[KEY_ENV]: h for h, env in envs.items()}
    clipped = clipped_spans(bills["spans"], args.timeout, dead_key(outcome, KEY_ENV))
    live = of_keys(clipped, {envs[h][KEY_ENV] for h in HOSTS})
    for label, spans in (
        ("at the server", bills["spans"]),
        ("live clients (ended when they hung up)", clipped),
        ("live clients of hosts a and b (the PostgreSQL slots)", live),
    ):
        n, at, by_key = peak_in_flight(spans)
        when = f" {at - killed['at']:+.1f} s from the kill" if killed and at else ""
        by_host = {names.get(k, k): v for k, v in by_key.items() if v}
        print(f"  peak in flight, {label}: {n} (limit {args.concurrency}){when}, by host {by_host}")
    for name in envs:  # host c too: an opted-in host pays
        bill = bills[name]
        gone = f"{bill['gone']} answered after its client hung up"
        print(f"  bill host {name}: {bill['calls']} answered calls, ${bill['usd']:.6f}; {gone}")


def report(setup: Setup, outcome: dict[str, Any]) -> bool:
    """Prints every figure; True when every check holds."""
    envs = outcome["envs"]
    everything = _get(f"{setup.provider}/_bill")
    bills = {"spans": everything["spans"], **{h: host_bill(setup, envs[h]) for h in envs}}
    clipped = clipped_spans(bills["spans"], setup.args.timeout, dead_key(outcome, KEY_ENV))
    bill_calls, bill_usd = sum(bills[h]["calls"] for h in envs), sum(bills[h]["usd"] for h in envs)
    answered, live, gone = Counter[str](), Counter[str](), Counter[str]()
    for h in envs:
        answered.update(bills[h]["ids"])
        live.update(bills[h]["ids"])
        live.subtract(bills[h]["gone_ids"])  # answered to a client that had hung up (killed)
        gone.update(bills[h]["gone_ids"])
    provider_twice = sum(1 for n in answered.values() if n > 1)
    live_twice = sum(1 for n in live.values() if n > 1)
    # An answer to a killed client reaches no cache, and the rerun pays for the call again: the
    # record holds the killed attempt as a lost_at_kill row (host a's intent log), read on host a.
    live_calls = bill_calls - sum(bills[h]["gone"] for h in envs)
    print_provider(setup, outcome, bills)
    print(
        f"  BILL: {bill_calls} answered calls ({live_calls} to live clients), ${bill_usd:.6f}; "
        f"ids answered more than once: {provider_twice} ({live_twice} to live clients)"
    )
    # Read on host a: the intent log of its killed run is in its own local folder (a remote
    # cache's log is kept on the host that wrote it), so host b's record lacks the calls lost.
    rebuilt = catalog_on(setup, envs["a"])
    print(f"catalog rebuilt on host a: {'yes' if rebuilt is None else 'FAILED ' + rebuilt}")
    view_calls, view_usd = print_view(clcg_query(setup, envs["a"], "--named", "call_costs"))
    spent, charged = print_ledger(ledger(setup.pg))
    lines = closing_lines(setup)
    print("closing lines:")
    for run, said in lines.items():
        for line in said:
            print(f"  [{run}] {line}")
    print(f"  said paid in all closing lines (this run + earlier runs): ${said_usd(lines):.4f}")
    pg_bill = sum(bills[h]["usd"] for h in HOSTS)
    paid_rows = clcg_query(setup, envs["a"], PAYMENTS_SQL)
    paid = paid_rows if isinstance(paid_rows, dict) else payments(paid_rows, answered, gone)
    record_calls, record_usd = print_record(clcg_query(setup, envs["a"], RECORD_SQL), paid)
    # Lost rows the provider never billed (an error, a request that never arrived) are estimates
    # on no bill: left out of the comparison with the bill, printed above.
    if not isinstance(paid_rows, dict):  # a second answer of a call lost at the kill: its rerun's
        live_twice = answered_twice(live, paid_rows)
    lost_usd = 0.0 if isinstance(paid, dict) else paid.lost_usd
    unbilled_calls, unbilled_usd = (
        (0, 0.0) if isinstance(paid, dict) else (paid.unbilled_lost, paid.unbilled_lost_usd)
    )
    billed_calls, billed_usd = record_calls - unbilled_calls, record_usd - unbilled_usd
    if setup.args.keep:  # the record and the bill by call id, for a closer look (moto's bucket goes)
        rows = clcg_query(setup, envs["a"], f"SELECT * FROM call_spend WHERE paid AND model = '{MODEL}'")
        (setup.root / "record.json").write_text(json.dumps(rows, default=str), encoding="utf-8")
        (setup.root / "bill.json").write_text(json.dumps(everything, default=str), encoding="utf-8")
    checks = {
        "provider answered no call twice to live clients": live_twice == 0,
        # A lost_at_kill row and the rerun's payment are two provider charges, not ours twice.
        "record: no call paid twice": not isinstance(paid, dict) and not paid.twice,
        "record: every answer billed to the killed client is in it (lost_at_kill)": not isinstance(paid, dict)
        and paid.lost_unrecorded == 0,
        # The PostgreSQL ledger's hosts (host c, opted in to file locks, keeps a ledger of its own).
        # The calls lost at the kill were never settled (nothing is reserved without a budget):
        # their estimate, from the rerun's answers, covers them.
        "ledger <= bill of a, b <= ledger + charged at death + lost at the kill": spent - 1e-9
        <= pg_bill
        <= spent + charged + lost_usd + 1e-9,
        "record's paid calls (billed ones lost at the kill in) == bill's calls": billed_calls == bill_calls,
        "record's USD == bill to the cent": abs(billed_usd - bill_usd) < 0.005,
        "spend view's calls and USD == the bill's": view_calls - unbilled_calls == bill_calls
        and abs(view_usd - unbilled_usd - bill_usd) < 0.005,
        "closing lines say each payment once (sum == bill)": abs(said_usd(lines) - bill_usd) < 0.0005 * 4,
        "both hosts paid": all(bills[h]["calls"] > 0 for h in HOSTS),
        "both final runs exited 0": all(v == 0 for v in outcome["exits"].values()),
        "peak in flight of live clients of a, b <= limit": peak_in_flight(
            of_keys(clipped, {envs[h][KEY_ENV] for h in HOSTS})
        )[0]
        <= setup.args.concurrency,
    }
    checks |= variant_checks(setup, outcome, pg_bill, bill_usd - billed_usd)
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    return all(checks.values())


def variant_checks(
    setup: Setup, outcome: dict[str, Any], pg_bill: float, unrecorded: float
) -> dict[str, bool]:
    """Items 4-6: the coordination said (output, run tags), a misconfigured host refused, the
    study budget held and said, no crash writing one partition from both hosts.

    The study budget binds the hosts sharing the PostgreSQL ledger (``pg_bill``: a and b); a host
    opted in to local file locks counts its own calls only (its coordination line says so)."""
    logs = {f"{p.parent.name}/{p.stem}": p for p in sorted(setup.root.glob("host-*/run*.log"))}
    said = coordination_lines(logs)
    refused = {"host-c/run1"}  # refused before saying how it coordinates
    tags = tag_counts(run_tags(setup.pg))
    skipped = clcg_query(setup, outcome["envs"]["b"], SKIPPED_SQL)
    skipped = -1 if isinstance(skipped, dict) else int(skipped[0]["n"])
    budgets = budget_lines({k: v for k, v in logs.items() if k in ("host-a/run2", "host-b/run1")})
    gone = {h: host_bill(setup, env)["gone"] for h, env in outcome["envs"].items()}
    print(f"coordination lines per run: { {k: len(v) for k, v in said.items()} }; run tags {dict(tags)}")
    print(f"calls skipped for a budget in the record: {skipped}; budget lines: {budgets}")
    print(f"bill - record: ${unrecorded:.6f}; answered after the client hung up: {gone}")
    for name in ("refused", "opted"):
        if name in outcome:
            print(f"host c ({setup.args.misconfigured}) {name}: {outcome[name]}")
    found = crashes(list(logs.values()))
    checks = {
        "every run says its coordination once": all(len(v) == 1 for k, v in said.items() if k not in refused),
        "every Dagster run tagged clcg/coordination": tags.get("-", 0) == 0 and bool(tags),
        f"no traceback or PreconditionFailed in the hosts' output {found}": not found,
    }
    checks |= budget_checks(setup.args.study_budget, pg_bill, budgets, skipped)
    if "refused" in outcome:
        checks |= refusal_checks(outcome["refused"], outcome["opted"])
        if setup.args.study_budget is not None:
            own = host_bill(setup, outcome["envs"]["c"])["usd"]
            checks["opted-in host's own bill <= the study budget"] = own <= setup.args.study_budget + 1e-9
    return checks


# -- setup and teardown ------------------------------------------------------------------------


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
    with serving(cmd, port, "fake provider", root / "provider.log"):
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
    parser.add_argument("--misconfigured", choices=MISCONFIGURED, help="a host c, misconfigured so")
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
            moto_s3(root / "moto.log") as s3_env,
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
