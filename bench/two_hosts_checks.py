"""The checks ``bench/two_hosts.py`` adds for issue 33's items 4-6 (its variants).

- **a misconfigured host** (``--misconfigured``): a third host ``c`` on the same ``s3://`` data
  folder whose ``DAGSTER_HOME`` lacks the PostgreSQL ``dagster.yaml`` (``no-pg-yaml``) or that
  has ``CLCG_COORD_DIR`` set (``coord-dir``) must be refused before any call, with one line
  saying how to configure the shared instance; with ``CLCG_ALLOW_LOCAL_COORD=1`` (the explicit
  opt-in) the same host runs and says it coordinates through local file locks;
- **the coordination said** once in every run's output and as every Dagster run's tag;
- **a study budget** (``--study-budget``): the bill never exceeds it across both hosts, and
  when it stopped calls the final runs say so once, naming the budget, the spend, the calls
  left and how to resume;
- **one partition written by both hosts on S3** (item 6): no ``PreconditionFailed`` (or any
  traceback) in the hosts' output.

Functions of text and figures only, so ``two_hosts.py`` keeps the processes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clcg_pipeline_tests.pg_server import PgServer

MODEL = "fake-gpt"
MISCONFIGURED = ("no-pg-yaml", "coord-dir")
COORD_LINE = re.compile(r"^coordination: ")
# The refusal names the fix: the shared PostgreSQL instance (dagster.postgres.yaml or the URL).
HOW_TO = re.compile(r"dagster\.postgres\.yaml|CLCG_COORD_URL=postgresql")
BUDGET_LINE = re.compile(r"budget reached: the (study|run) budget")
CRASH = re.compile(r"PreconditionFailed|Traceback \(most recent call last\)")


def misconfigure(env: dict[str, str], how: str, base: Path, plain_yaml: Path) -> dict[str, str]:
    """Host ``c``'s environment: host b's, broken the way ``how`` says."""
    home = base / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    if how == "no-pg-yaml":  # the project's default instance file: SQLite, no PostgreSQL
        (home / "dagster.yaml").write_bytes(plain_yaml.read_bytes())
        return {**env, "DAGSTER_HOME": str(home)}
    (base / "coord").mkdir(exist_ok=True)
    return {**env, "CLCG_COORD_DIR": str(base / "coord")}


def text(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8", errors="replace").splitlines() if log.exists() else []


def coordination_lines(logs: dict[str, Path]) -> dict[str, list[str]]:
    """Each run's ``coordination: ...`` lines (one each is right)."""
    return {name: [line for line in text(log) if COORD_LINE.match(line)] for name, log in logs.items()}


def refusal(log: Path, exit_code: int | str, bill_calls: int) -> dict[str, Any]:
    """What the misconfigured host's refused run did: its exit, the lines naming the fix, its bill."""
    lines = text(log)
    how = [line for line in lines if HOW_TO.search(line)]
    return {
        "exit": exit_code,
        "how_to_lines": len(how),
        "line": how[0] if how else lines[-3:],
        "paid": bill_calls,
    }


def refusal_checks(refused: dict[str, Any], opted: dict[str, Any]) -> dict[str, bool]:
    return {
        "misconfigured host refused (exit != 0)": refused["exit"] not in (0, "timed out (killed)"),
        "misconfigured host: one line says how to configure the shared instance": refused["how_to_lines"]
        == 1,
        "misconfigured host paid nothing": refused["paid"] == 0,
        "opted-in host ran (exit 0) and says local file locks": opted["exit"] == 0
        and any("local file locks" in line for line in opted["coordination"]),
    }


def tag_counts(rows: list[tuple[Any, ...]]) -> Counter[str]:
    """``clcg/coordination`` tag values over the instance's runs (``-`` for a run without one)."""
    return Counter(str(value) if value is not None else "-" for _, value in rows)


RUN_TAGS_SQL = (
    "SELECT r.run_id, t.value FROM runs r LEFT JOIN run_tags t "
    "ON t.run_id = r.run_id AND t.key = 'clcg/coordination'"
)


def budget_lines(logs: dict[str, Path]) -> dict[str, list[str]]:
    return {
        name: [line.strip() for line in text(log) if BUDGET_LINE.search(line)] for name, log in logs.items()
    }


def budget_checks(
    budget: float | None, bill_usd: float, lines: dict[str, list[str]], skipped: int
) -> dict[str, bool]:
    """The study budget's checks: never exceeded by both hosts' bill; said once where it stopped calls."""
    if budget is None:
        return {}
    said = [line for found in lines.values() for line in found]
    complete = all(
        "study budget" in line and "spent" in line and "left unmade" in line and "resume" in line
        for line in said
    )
    return {
        f"both hosts' bill <= the study budget ${budget}": bill_usd <= budget + 1e-9,
        "no run says the budget line twice": all(len(found) <= 1 for found in lines.values()),
        "a budget that stopped calls is said (which, spent, calls left, resume)": (bool(said) or skipped == 0)
        and complete,
    }


def crashes(logs: list[Path]) -> dict[str, int]:
    """Tracebacks and S3 precondition failures in each host's output (item 6: none)."""
    found = {
        log.parent.name + "/" + log.stem: sum(1 for line in text(log) if CRASH.search(line)) for log in logs
    }
    return {name: n for name, n in found.items() if n}


# What a closing line says was paid: by this command's runs, by runs no closing line said, and
# the calls in flight when a run was killed (lost_at_kill: billed, at an estimated cost).
SAID = re.compile(r"(?:costing|paid by earlier runs .*?:|may have billed them \(estimated) \$([0-9.]+)")


def said_usd(lines: dict[str, list[str]]) -> float:
    """What all closing lines together say was paid (each payment should be said once)."""
    return sum(float(m.group(1)) for ls in lines.values() for line in ls if (m := SAID.search(line)))


def dead_key(outcome: dict[str, Any], key_env: str) -> tuple[str, float] | None:
    """Host a's key and kill time: its requests in flight then end there for the limit's check."""
    return (outcome["envs"]["a"][key_env], outcome["killed"]["at"]) if outcome["killed"] else None


def clipped_spans(spans: list[Any], timeout: float, dead: tuple[str, float] | None = None) -> list[Any]:
    """Each request as its client lived it: ended when the server saw the client hang up (a
    span's fifth field: a timeout, a kill), as the client's slots were given back then.

    Spans from before that field was kept: a slow answer's client gave up at its timeout
    (the server answers 504 after ``slow_s``), measured from the arrival, so a few ms late.
    With ``dead`` (a key, its kill time), that client's requests end at its kill, as its
    shared slots do. The server still works on them: "at the server" counts those too."""
    clipped = []
    for a, b, k, status, *rest in spans:
        gone = rest[0] if rest else None
        if gone is not None:
            b = min(b, gone)
        elif status == 504:
            b = min(b, a + timeout)
        if dead is not None and k == dead[0] and a < dead[1]:
            b = min(b, dead[1])
        clipped.append((a, b, k, status))
    return clipped


def of_keys(spans: list[Any], keys: set[str]) -> list[Any]:
    """The spans of the hosts holding ``keys``: the limit binds the hosts that share its
    PostgreSQL slots, not a host opted in to local file locks (its limit is its own)."""
    return [span for span in spans if span[2] in keys]


def peak_in_flight(spans: list[Any]) -> tuple[int, float, dict[str, int]]:
    """The most requests in flight at once, when, and whose (a departure before an arrival at a tie)."""
    events = sorted([(a, 1, k) for a, _, k, *_ in spans] + [(b, -1, k) for _, b, k, *_ in spans])
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


def print_record(record: Any, paid: Payments | dict[str, Any]) -> tuple[int, float]:
    """The record by host, step and table: (paid calls, USD); -1 and NaN when a query failed."""
    print("the record (call_spend, fake-gpt) by host, step, table:")
    if isinstance(record, dict) or isinstance(paid, dict):
        print(f"  FAILED: {(record if isinstance(record, dict) else paid)['error']}")
        return -1, float("nan")
    for r in record:
        print(f"  {r}")
    calls, usd = sum(int(r["paid_calls"]) for r in record), sum(float(r["paid_usd"] or 0) for r in record)
    print(f"  RECORD: {calls} paid calls, ${usd:.6f}; calls paid twice {len(paid.twice)} {paid.twice[:3]}")
    print(
        f"  lost at the kill: {paid.lost} billed, {paid.unbilled_lost} not billed "
        f"(${paid.unbilled_lost_usd:.6f} estimated); billed answers to the killed client with no "
        f"row: {paid.lost_unrecorded}"
    )
    return calls, usd


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
# Each call id's payments in the record: those its runs made, and its calls lost at a kill
# (outcome lost_at_kill: the killed attempt's own charge, not a second payment by the pipeline).
PAYMENTS_SQL = (
    "SELECT call_id, count(*) FILTER (WHERE outcome IS DISTINCT FROM 'lost_at_kill') AS payments, "
    "count(*) FILTER (WHERE outcome = 'lost_at_kill') AS lost, "
    "coalesce(sum(paid_usd) FILTER (WHERE outcome = 'lost_at_kill'), 0) AS lost_usd, "
    f"list(DISTINCT run) AS runs FROM call_spend WHERE paid AND model = '{MODEL}' GROUP BY call_id"
)


@dataclass
class Payments:
    """The record's payments judged by call id against the provider's bill."""

    twice: list[dict[str, Any]]  # call ids the pipeline's own runs paid more than once
    lost: int  # rows lost at a kill the provider billed (a second charge of its call id)
    lost_usd: float  # their estimated cost (the ledger never settled them)
    unbilled_lost: int  # lost rows the provider did not bill (the request got an error or never arrived)
    unbilled_lost_usd: float  # their estimated cost, counted by the record but on no bill
    lost_unrecorded: int  # billed answers to a killed client (gone_ids) no row of its call id covers


def payments(rows: list[dict[str, Any]], billed: Counter[str], gone: Counter[str]) -> Payments:
    """``PAYMENTS_SQL``'s rows judged against the provider's billed call ids (``ids``, with the
    answers sent after the client hung up) and those answered to a killed client (``gone_ids``).

    Two real payments of one call id are a double payment by us. A lost_at_kill row is the
    killed attempt's charge: with the rerun's payment it makes two provider charges, right when
    the provider billed the id as often; a lost row beyond the id's billed count is an attempt
    the provider never billed (its cost is only an estimate)."""
    twice, lost, lost_usd, unbilled, unbilled_usd = [], 0, 0.0, 0, 0.0
    for row in rows:
        real, lost_rows = int(row["payments"]), int(row["lost"])
        if real > 1:
            twice.append(row)
        matched = min(lost_rows, max(0, billed[row["call_id"]] - real))
        lost += matched
        if lost_rows:
            lost_usd += float(row["lost_usd"]) * matched / lost_rows
            unbilled += lost_rows - matched
            unbilled_usd += float(row["lost_usd"]) * (lost_rows - matched) / lost_rows
    recorded = {row["call_id"]: int(row["payments"]) + int(row["lost"]) for row in rows}
    missing = sum(1 for call_id in gone if gone[call_id] and billed[call_id] > recorded.get(call_id, 0))
    return Payments(twice, lost, lost_usd, unbilled, unbilled_usd, missing)


def answered_twice(live: Counter[str], rows: list[dict[str, Any]]) -> int:
    """Call ids the provider answered more than once to live clients, each answer to the killed
    host before it cached one (a lost_at_kill row of the call) left out: the rerun had to pay
    for such a call again, which no coordination can spare."""
    lost = {row["call_id"]: int(row["lost"]) for row in rows}
    return sum(1 for call_id, n in live.items() if n - lost.get(call_id, 0) > 1)


SKIPPED_SQL = "SELECT count(*) AS n FROM call_spend WHERE outcome = 'skipped_budget'"


def run_tags(pg: PgServer) -> list[tuple[Any, ...]]:
    import psycopg2

    conn = psycopg2.connect(host=pg.host, port=pg.port, user=pg.user, dbname=pg.dbname)
    try:
        with conn.cursor() as cur:
            cur.execute(RUN_TAGS_SQL)
            return cur.fetchall()
    finally:
        conn.close()
