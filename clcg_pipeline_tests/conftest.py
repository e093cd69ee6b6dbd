"""Fixtures shared by every test package."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[1]


# -- where tmp_path lives: in memory when the machine allows --

# What a test may leave in memory: pytest keeps the last three sessions' folders (tens of MB each).
_MEMORY_TEMP = Path("/dev/shm")
_MEMORY_TEMP_FREE = 8 << 30


def use_memory_for_tmp_path(root: Path = _MEMORY_TEMP, free: int = _MEMORY_TEMP_FREE) -> bool:
    """Put pytest's temporary folders (``tmp_path``) on the in-memory file system ``root``.

    Every Dagster instance of the suite keeps its runs and events in SQLite under a
    ``tmp_path``, committing (and syncing to disk) each event: on a busy 2-core machine's disk
    that was half of a study run's time (``test_killed_calls_ahead.py``: 95 s on disk, 55 s in
    memory, back to back). Left alone when ``PYTEST_DEBUG_TEMPROOT`` is set (pytest's own way
    to choose; set it to /tmp to keep the files on disk), when ``root`` is missing, mounted
    ``noexec`` (tests run programs from a ``tmp_path``, e.g. a wheel's venv) or short of space.
    """
    if "PYTEST_DEBUG_TEMPROOT" in os.environ or not root.is_dir():
        return False
    stats = os.statvfs(root)
    if stats.f_flag & os.ST_NOEXEC or stats.f_bavail * stats.f_frsize < free:
        return False
    os.environ["PYTEST_DEBUG_TEMPROOT"] = str(root)  # read when pytest makes its first tmp_path
    return True


use_memory_for_tmp_path()


def run_clcg(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``clcg ARGS`` in a fresh interpreter, as a user would type it; output captured, never raises."""
    return subprocess.run(
        [sys.executable, "-m", "clcg_pipeline.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def assert_interrupted_in_one_line(returncode: int | None, out: str, err: str) -> None:
    """Ctrl-C during `clcg run`: exit 130 and one plain line, none of Dagster's tracebacks."""
    assert returncode == 130, (out, err)
    assert "interrupted" in err and "run again to resume" in err
    for noise in ("Traceback", "KeyboardInterrupt", "DagsterExecutionInterruptedError"):
        assert noise not in out + err


def add_fake_model(config_dir: Path, edit_yaml: Callable, url: str, key_env: str, **settings: object) -> None:
    """Add ``fake-gpt``, an OpenAI-compatible model served by the fake server at ``url``."""
    model = {
        "id": "fake-gpt",
        "provider": "openai_compatible",
        "model": "gpt-fake",
        "base_url": f"{url}/v1",
        "api_key_env": key_env,
        "knowledge_cutoff": "2022-01-01",
        "price_input_per_mtok": 1.0,
        "price_output_per_mtok": 4.0,
        **settings,
    }
    edit_yaml(config_dir / "models.yaml", lambda doc: doc["models"].append(model))


# add_fake_model's prices, USD per million tokens: what fake_provider_bill charges.
FAKE_PRICE_IN, FAKE_PRICE_OUT = 1.0, 4.0


def paid_cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, key_env: str, key: str) -> Path:
    """For ``clcg run`` through ``main``: a Dagster home in ``tmp_path``, the fake provider's key
    in ``key_env``, lines wide enough that one line stays one; the data folder's path."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(key_env, key)
    monkeypatch.setenv("COLUMNS", "400")
    return tmp_path / "data"


def fake_provider_bill(
    monkeypatch: pytest.MonkeyPatch, rewrite: Callable[[dict[str, Any]], None] | None = None
) -> list[float]:
    """What the fake provider charges: each answered request's usage at add_fake_model's prices.

    ``rewrite`` may change a request's body before the server answers it (e.g. so that an item
    generator's request is answered with items)."""
    import json

    from clcg_pipeline.calls import fake_server

    charges: list[float] = []
    original = fake_server.App.openai

    async def billed(self: object, request: Any) -> Any:
        if rewrite is not None:
            rewrite(await request.json())
        response = await original(self, request)
        if response.status_code == 200:
            usage = json.loads(response.body)["usage"]
            charges.append(
                (usage["prompt_tokens"] * FAKE_PRICE_IN + usage["completion_tokens"] * FAKE_PRICE_OUT) / 1e6
            )
        return response

    monkeypatch.setattr(fake_server.App, "openai", billed)
    return charges


def partition_call_rows(data: Path, model: str = "fake-gpt") -> Any:
    """Every row of ``model``'s partitions of the calls and task_calls tables in ``data``."""
    import pandas as pd

    return pd.concat(
        pd.read_parquet(path)
        for table in ("calls", "task_calls")
        for path in (data / table).rglob("*.parquet")
        if model in str(path)
    )


def record_chat_spans(
    monkeypatch: pytest.MonkeyPatch, clock: Callable[[], float]
) -> list[tuple[str, float, float]]:
    """(call id, arrival, departure) by ``clock`` of every chat request the fake server answers."""
    from clcg_pipeline.calls import fake_server

    spans: list[tuple[str, float, float]] = []
    original = fake_server.App.openai

    async def timed(self: object, request: object) -> object:
        start = clock()
        try:
            return await original(self, request)
        finally:
            call_id = request.headers.get(fake_server.CALL_ID_HEADER, "-")  # type: ignore[attr-defined]
            spans.append((call_id, start, clock()))

    monkeypatch.setattr(fake_server.App, "openai", timed)
    return spans


DEFAULT_CONFIG = PROJECT_ROOT / "assets_config"
DEMO_LANGUAGES = ("en", "pt", "is", "mt", "sw", "ka", "ht")


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    """A writable copy of the default config folder."""
    target = tmp_path / "config"
    shutil.copytree(DEFAULT_CONFIG, target)
    return target


@pytest.fixture
def edit_yaml() -> Callable[[Path, Callable[[dict], None]], None]:
    """Load a YAML file, let the test change the dict, write it back."""
    return _edit_yaml


def _edit_yaml(path: Path, change: Callable[[dict], None]) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")


def cut_to_demo(config_dir: Path) -> None:
    """The config cut to the demo corpus's languages and 200 replicates, for fast graph tests."""

    def keep_demo(doc: dict) -> None:
        doc["languages"] = [lang for lang in doc["languages"] if lang["iso"] in DEMO_LANGUAGES]

    _edit_yaml(config_dir / "languages.yaml", keep_demo)
    _edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(bootstrap_replicates=200))


@pytest.fixture
def demo_config_dir(config_dir: Path) -> Path:
    """A writable copy of the default config cut to the demo (``cut_to_demo``)."""
    cut_to_demo(config_dir)
    return config_dir


def collect_then_freeze() -> None:
    """Collect the garbage, then leave what survived out of every later collection (``gc.freeze``).

    What is alive between two tests (session and module fixtures, Dagster's caches) was scanned
    by every test's collection and by every automatic full collection during a study run: on a
    busy 2-core machine 40-85 ms a test (50,000-95,000 objects), and half of the collector's time
    in ``test_study_range_runs.py`` after another module. Frozen, it scans only what is new since.
    What is frozen and later dies in a reference cycle stays in memory until the process ends
    (frozen objects are never collected): a little memory in a test process, and such a cycle
    is never finalized mid-test either.
    """
    import gc

    gc.collect()
    gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection imported (Dagster, pandas, the package) before anything runs: the
    module fixture of a worker's first module (a study run) runs before any test's own fixtures,
    and every automatic full collection during it would walk all of that."""
    collect_then_freeze()


@pytest.fixture(autouse=True)
def _no_leaked_dagster_state_storage() -> Iterator[None]:
    """Dagster's test instances can leave a context variable pointing at a closed instance,
    which breaks the next test that loads definitions; give every test a clean slate.

    The garbage is collected first: an instance entered and never exited leaves its context
    manager suspended, and when the cyclic collector finalizes it (at any moment, in whatever
    test is running) it puts back the variable's old value, a storage whose instance is gone.
    Collected here, that happens before the slate is cleaned, not in the middle of a test."""
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    collect_then_freeze()
    with set_defs_state_storage(None):
        yield


def materialize(*args: object, **kwargs: object) -> object:
    """``dg.materialize`` in a clean definitions context: a run can leave Dagster's context-local
    defs-state storage pointing at its disposed instance, and the next ``materialize`` in the same
    test then fails to load its definitions (seen once on CI, depending on garbage collection)."""
    import dagster as dg
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    with set_defs_state_storage(None):
        return dg.materialize(*args, **kwargs)  # type: ignore[arg-type]


def add_partition_backfill(
    instance: Any, asset_graph: Any, backfill_id: str, partitions: list[str], assets: list[Any]
) -> Any:
    """An asset backfill of ``partitions`` of ``assets`` (asset keys), added to ``instance`` as the UI
    would launch it; the daemon (or ``execute_backfill_iteration``) picks it up from there."""
    import time

    from dagster._core.execution.backfill import PartitionBackfill

    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id=backfill_id,
        asset_graph=asset_graph,
        partition_names=partitions,
        asset_selection=assets,
        backfill_timestamp=time.time(),
        tags={},
        dynamic_partitions_store=instance,
        all_partitions=False,
        title=None,
        description=None,
        run_config=None,
    )
    instance.add_backfill(backfill)
    return backfill


# -- the order the suite runs in (make test: xdist's loadscope, one module per worker at a time) --


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests first: one of the two-minute end-to-end tests taken near the end would leave
    the other worker idle; started first, they overlap the hundreds of short tests.

    ``make test`` hands out whole modules (``--dist loadscope``), so a module-scoped fixture (a
    study run, a database) is built once, and keeps this order (``--no-loadscope-reorder``).
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: file order kept


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``loadscope``, with the modules reading the shared demo study as one scope.

    A session fixture is built once per worker; scoped by module, the four modules that read
    the demo study would land on both workers and each build it (40-50 s apiece). The same for
    the modules that copy the small study (``small_study``).
    """
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    from clcg_pipeline_tests.demo_study import DEMO_STUDY_MODULES

    class DemoStudyScope(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(DEMO_STUDY_MODULES):
                return "demo-study"
            if nodeid.startswith(SMALL_STUDY_MODULES):
                return "small-study"
            return super()._split_scope(nodeid)

    return DemoStudyScope(config, log)


@pytest.fixture(scope="session")
def demo_study(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The finished demo study (``demo_study.run_demo_study``), once per worker."""
    from clcg_pipeline_tests.demo_study import run_demo_study

    return run_demo_study(tmp_path_factory.mktemp("demo_study"))


# -- a small study, built once per worker and copied by the tests that start from a built study --

# The modules that copy it: one xdist scope (``pytest_xdist_make_scheduler``), so one worker builds it.
SMALL_STUDY_MODULES = (
    "clcg_pipeline_tests/orchestration/test_adding_a_model.py",
    "clcg_pipeline_tests/test_daemon.py",
    "clcg_pipeline_tests/test_study_run_freshness.py",
    "clcg_pipeline_tests/test_uncovered_languages.py",
)
SMALL_PANEL = ("en", "pt")


@dataclass(frozen=True)
class SmallStudy:
    """``run_study`` on the demo's config cut to ``SMALL_PANEL`` and 50 replicates, in ``root``:
    ``config/``, ``data/`` and the Dagster home ``dagster_home/`` (where ``LocalDaemon`` looks)."""

    root: Path
    summary: Any  # the run's RunSummary

    def copy_to(self, target: Path) -> Path:
        """A copy of the three folders in ``target``, for a test that runs on or changes them."""
        shutil.copytree(self.root, target, dirs_exist_ok=True)
        return target


def cut_to_small_panel(config_dir: Path) -> None:
    """The demo config cut further to ``SMALL_PANEL`` and 50 replicates."""
    cut_to_demo(config_dir)
    _edit_yaml(
        config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[lang for lang in doc["languages"] if lang["iso"] in SMALL_PANEL]),
    )
    _edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(bootstrap_replicates=50))


@pytest.fixture(scope="session")
def small_study(tmp_path_factory: pytest.TempPathFactory) -> SmallStudy:
    """The small study, built once per worker; copy it (``SmallStudy.copy_to``) before use."""
    from clcg_pipeline.orchestration import run_study

    root = tmp_path_factory.mktemp("small_study")
    shutil.copytree(DEFAULT_CONFIG, root / "config")
    cut_to_small_panel(root / "config")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DAGSTER_HOME", str(root / "dagster_home"))
        summary = run_study(config_dir=str(root / "config"), data_dir=str(root / "data"))
    return SmallStudy(root, summary)


# A local S3-compatible server (moto), one per test module, and a fresh bucket per test.
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    from moto import server as moto_server

    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The standard AWS variables for the local server, set here and returned for subprocesses.

    No DuckDB extension may be downloaded: ``HOME`` points at an empty folder, so none is cached."""
    import s3fs  # in requirements.lock (the s3 and dev extras): missing must fail, not skip

    env = {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "HOME": str(tmp_path / "home"),
        # One host: file locks may coordinate its s3:// cache (calls._coord.check_coordination).
        "CLCG_ALLOW_LOCAL_COORD": "1",
    }
    (tmp_path / "home").mkdir()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    s3fs.S3FileSystem.clear_instance_cache()  # instances remember the endpoint they were made with
    return env


@pytest.fixture
def bucket(s3_env: dict[str, str]) -> str:
    import s3fs

    name = f"clcg-{uuid.uuid4().hex[:12]}"
    s3fs.S3FileSystem().mkdir(name)
    return name


# Dagster's backfill daemon wakes every 30 s (``DEFAULT_DAEMON_INTERVAL_SECONDS``; dagster.yaml has
# no setting for it): a daemon test waits on it for every backfill (the corpus of a fresh study, a
# new model's family) and for it to mark the backfill done, before which the analysis waits; ~50 s
# of test_daemon.py's two minutes of waiting. A daemon started by such a test wakes every 2 s
# instead (every interpreter started with this PYTHONPATH reads the module; only dagster-daemon
# acts on it); what it launches, and in what order, is the same.
_QUICK_BACKFILLS = """
import sys

if sys.argv and sys.argv[0].endswith("dagster-daemon"):
    import dagster._daemon.controller as controller

    controller.DEFAULT_DAEMON_INTERVAL_SECONDS = 2
"""


def quick_backfill_daemon(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``dagster-daemon`` processes started from now on tick backfills every 2 s (above)."""
    site.mkdir()
    (site / "sitecustomize.py").write_text(_QUICK_BACKFILLS, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (str(site), os.environ.get("PYTHONPATH")))))
