"""Runs in several processes sharing one cache: claims, a shared concurrency limit, a study budget."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallOptions
from clcg_pipeline.calls._coord import COORD_ENV, WAIT, CallClaims, SpendLedger, coord_root
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline_tests.calls.conftest import FAKE_KEY_ENV

WORKER = [sys.executable, "-m", "clcg_pipeline_tests.calls.coord_worker"]


def _run_pair(
    url: str, cache: Path, go: Path, runs: list[tuple[str, int, int, str, str]], timeout: float = 90
) -> list[dict[str, object]]:
    """Start one worker per (tag, n, concurrency, budget, order); release them together; their lines."""
    env = {**os.environ, FAKE_KEY_ENV: os.environ[FAKE_KEY_ENV]}
    procs = [
        subprocess.Popen(
            [*WORKER, url, str(cache), tag, str(n), str(c), budget, str(go), order],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag, n, c, budget, order in runs
    ]
    for proc in procs:  # every worker has imported everything and waits at the barrier
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, stderr[-2000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


@pytest.mark.usefixtures("fake_key")
def test_two_processes_share_calls_in_flight_and_the_concurrency_limit(tmp_path: Path) -> None:
    n = 32  # the same calls in both processes (from opposite ends), each allowed 4 in flight
    with FakeServer(Faults(latency_s=0.15)) as server:
        outs = _run_pair(
            server.url,
            tmp_path / "cache",
            tmp_path / "go",
            [("same", n, 4, "-", "forward"), ("same", n, 4, "-", "reverse")],
        )
        sent, peak = server.state.requests, server.state.max_in_flight
    # Every call answered once at the server; the other process took the first's cached result.
    assert len(sent) == n and set(sent.values()) == {1}, dict(sent)
    for out in outs:
        assert sum(out["outcomes"].values()) == n  # type: ignore[attr-defined]
        assert all(k.startswith("ok:") for k in out["outcomes"])  # type: ignore[attr-defined]
    new = sum(v for o in outs for k, v in o["outcomes"].items() if k.endswith(":new"))  # type: ignore[attr-defined]
    assert new == n
    # The limit of 4 holds for both processes together, and both were sending.
    assert 3 <= peak <= 4, f"{peak} requests in flight against a limit of 4 shared by two processes"
    assert all(any(k.endswith(":new") for k in o["outcomes"]) for o in outs), outs  # type: ignore[attr-defined]


@pytest.mark.usefixtures("fake_key")
def test_study_budget_holds_across_processes(tmp_path: Path) -> None:
    budget = 0.004  # a call is estimated at ~$0.0009 (200 output tokens at $4/Mtok) and costs less
    with FakeServer(Faults(latency_s=0.05)) as server:
        outs = _run_pair(
            server.url,
            tmp_path / "cache",
            tmp_path / "go",
            [("x", 30, 4, str(budget), "forward"), ("y", 30, 4, str(budget), "forward")],
        )
        sent = sum(server.state.requests.values())
    spent = sum(float(o["spent"]) for o in outs)  # type: ignore[arg-type]
    ledger_spent, outstanding = SpendLedger(tmp_path / "cache" / "_coord").totals()
    assert spent == pytest.approx(ledger_spent)
    assert 0 < spent <= budget and outstanding == 0
    assert sent < 60  # the shared budget stopped both runs, not one budget each
    skipped = [
        v
        for o in outs
        for k, v in o["outcomes"].items()
        if k.startswith("skipped_budget:StudyBudgetExceeded")  # type: ignore[attr-defined]
    ]
    assert sum(skipped) == 60 - sent


def test_a_dead_holders_claim_is_taken_over(tmp_path: Path) -> None:
    call_id = "ab" * 32
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from pathlib import Path; from clcg_pipeline.calls._coord import CallClaims;"
            f"c = CallClaims(Path({str(tmp_path)!r})).try_claim({call_id!r});"
            "print(c is not None, flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        claims = CallClaims(tmp_path)
        assert claims.try_claim(call_id) is None  # held by a live process
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    claim = claims.try_claim(call_id)  # the kernel dropped the dead holder's lock
    assert claim is not None
    assert claims.try_claim(call_id) is None  # and this process holds it now, for one task
    claims.release(claim)
    assert claims.try_claim(call_id) is not None


def test_ledger_charges_reservations_of_dead_processes(tmp_path: Path) -> None:
    ledger = SpendLedger(tmp_path)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    with open(ledger.path, "a") as handle:
        line = {
            "op": "reserve",
            "id": "x",
            "usd": 5.0,
            "host": os.uname().nodename,
            "pid": pid,
            "t": time.time(),
        }
        handle.write(json.dumps(line) + "\n")
    # The dead process's request may still be answered and billed: its $5 is charged for good
    # (it was dropped before, and the budget under-counted what the provider billed).
    assert ledger.reserve(1.0, limit=5.5) is None
    rid = ledger.reserve(1.0, limit=7.0)
    assert rid not in (None, WAIT)
    assert ledger.reserve(1.5, limit=7.0) == WAIT  # ours holds budget too, until it settles
    ledger.settle(rid, 0.25)
    # The answers' costs and the charge at death stay apart (only the first is on any bill).
    assert SpendLedger(tmp_path).totals() == (0.25, 0.0)
    assert SpendLedger(tmp_path).charged_at_death() == 5.0
    assert ledger.reserve(1.9, limit=7.0) is None  # spent for good: refused, not deferred
    charges = [json.loads(raw) for raw in ledger.path.read_text().splitlines() if '"charge"' in raw]
    assert [(c["id"], c["usd"], c["pid"], c["why"]) for c in charges] == [("x", 5.0, pid, "died")]


def test_runner_and_batch_modules_do_not_import_each_other() -> None:
    root = Path(__file__).resolve().parents[2] / "clcg_pipeline" / "calls"
    graph: dict[str, set[str]] = {}
    for path in root.glob("*.py"):
        mods: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("clcg_pipeline.calls.")
            ):
                mods.add(node.module.rsplit(".", 1)[1])
        graph[path.stem] = mods

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(
            m == goal or (m not in seen and reaches(m, goal, seen | {m})) for m in graph.get(start, ())
        )

    cycles = sorted(m for m in graph if reaches(m, m, {m}))
    assert not cycles, f"import cycle through {cycles}"


@pytest.mark.usefixtures("fake_key")
def test_study_budget_binds_partition_after_partition(server: FakeServer, tmp_path: Path) -> None:
    from clcg_pipeline.config import StudyConfig
    from clcg_pipeline.inference import predict_partition
    from clcg_pipeline_tests.calls.conftest import FAST, spec_for
    from clcg_pipeline_tests.inference.test_predict import CONDITIONS, _items, _paragraphs

    # study.yaml's optional field; a call is estimated at ~$0.0042 (1024 output tokens at $4/Mtok)
    # and costs ~$0.00017: the budget pays for two calls, then the study stops for good
    study = StudyConfig.model_validate({"budget_usd": 0.0045})
    spec = spec_for("openai", server.url, concurrency=2)
    docs = [f"d{i}" for i in range(4)]
    spent = 0.0
    outcomes: list[str] = []
    for language in ("en", "pt"):  # two runs of the study, one partition each (as the daemon does)
        calls = predict_partition(
            model=spec,
            language=language,
            paragraphs=_paragraphs(language, docs),
            items=_items(docs),
            reps=dict.fromkeys(docs, 1),
            conditions={"full_body": CONDITIONS["full_body"]},
            options=CallOptions(cache_dir=str(tmp_path), study_budget_usd=study.budget_usd, policy=FAST),
        ).calls
        spent += float(calls.loc[~calls["cached"], "cost_usd"].sum())
        outcomes += list(calls["outcome"])
    assert 0 < spent <= 0.0045
    assert outcomes[:4].count("ok") == 2 and outcomes[4:] == ["skipped_budget"] * 4
    assert SpendLedger(tmp_path / "_coord").totals()[0] == pytest.approx(spent)


@pytest.mark.usefixtures("fake_key")
def test_a_remote_cache_is_coordinated_on_this_host(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clcg_pipeline.calls import run_requests
    from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for

    monkeypatch.delenv(COORD_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    # Only this host uses the remote cache: the opt-in that lets local file locks coordinate it
    # (without it the run is refused, test_coordination_refused.py).
    monkeypatch.setenv("CLCG_ALLOW_LOCAL_COORD", "1")
    # An object-store cache has no file locks: its claims, slots and ledger live in a folder of
    # this host keyed by the URL (before, coordination was simply off and a call could be paid
    # twice by two workers of one `clcg run`).
    root = coord_root("memory://clcg-coord-test")
    assert root is not None and root.is_relative_to(tmp_path / "xdg")
    assert root == coord_root("memory://clcg-coord-test") != coord_root("memory://another")
    spec = spec_for("openai", server.url, concurrency=1)
    requests = [make_request(tag=f"url-{i}") for i in range(6)]
    results = run_requests(
        spec,
        requests,
        CallOptions(cache_dir="memory://clcg-coord-test", policy=FAST, study_budget_usd=0.0012),
    )
    outcomes = [r.outcome for r in results]
    assert "ok" in outcomes and "skipped_budget" in outcomes
    spent = sum(r.cost_usd for r in results)
    assert spent <= 0.0012
    assert SpendLedger(root).totals()[0] == pytest.approx(spent)


@pytest.mark.usefixtures("fake_key")
def test_batch_mode_reserves_and_records_in_the_study_ledger(server: FakeServer, tmp_path: Path) -> None:
    from clcg_pipeline.calls import bind, run_requests
    from clcg_pipeline.calls._results import estimate_cost
    from clcg_pipeline_tests.calls.conftest import make_request, spec_for

    spec = spec_for("openai", server.url)
    requests = [make_request(tag=f"batch-{i}") for i in range(5)]
    # What one call costs, from a run without a budget in another cache.
    [priced] = run_requests(
        spec, requests[:1], CallOptions(cache_dir=str(tmp_path / "priced"), mode="batch", batch_poll_s=0.01)
    )
    worst = max(estimate_cost(spec, r) for r in bind(spec, requests))
    # Each request is reserved at its worst case until its batch is collected, and a request that
    # fits only once those settle waits for them (the next round): a call passes while spent +
    # worst case fits, so two pass in worst + 1.5 calls, whatever the batch API's timing.
    limit = worst + 1.5 * priced.cost_usd
    results = run_requests(
        spec,
        requests,
        CallOptions(cache_dir=str(tmp_path), mode="batch", batch_poll_s=0.01, study_budget_usd=limit),
    )
    outcomes = [r.outcome for r in results]
    assert outcomes.count("ok") == 2 and outcomes.count("skipped_budget") == 3
    assert {r.error for r in results if r.outcome == "skipped_budget"} == {"StudyBudgetExceeded"}
    spent, outstanding = SpendLedger(tmp_path / "_coord").totals()
    assert spent == pytest.approx(sum(r.cost_usd for r in results)) and spent > 0
    assert outstanding == 0
