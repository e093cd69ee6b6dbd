"""A real Label Studio for the push/pull tests: started on 127.0.0.1, stopped, never left behind.

The server (PyPI ``label-studio``) lives in its own venv, ``.venv-label-studio`` (``make
setup-label-studio``), or wherever ``CLCG_LABEL_STUDIO_BIN`` points. It runs in a process group of
its own with Linux's parent-death signal (the project's helper of ``orchestration/_workers.py``),
so a test process killed with SIGKILL takes it along; its data folder is under the test's tmp.
Its first user and that user's legacy API token are made at start-up from Label Studio's own
variables (``LABEL_STUDIO_USERNAME`` / ``_PASSWORD`` / ``_USER_TOKEN``, ``label_studio/server.py``).
"""

from __future__ import annotations

import ctypes  # noqa: F401 (imported before any fork: the guard uses it between fork and exec)
import http.cookiejar
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clcg_pipeline.orchestration import PROJECT_ROOT
from clcg_pipeline.orchestration._workers import _set_parent_death_signal

BIN_ENV = "CLCG_LABEL_STUDIO_BIN"
REQUIRE_ENV = "CLCG_REQUIRE_LABEL_STUDIO"
VENV_BIN = Path(PROJECT_ROOT) / ".venv-label-studio" / "bin" / "label-studio"
#: Migrations of a fresh SQLite database take ~25 s on a CI machine; a cold disk, more.
START_TIMEOUT_S = 240.0


def label_studio_bin() -> Path | None:
    """The server's executable: the project's venv, else ``$CLCG_LABEL_STUDIO_BIN``; None if neither."""
    for candidate in (VENV_BIN, Path(os.environ.get(BIN_ENV, "") or "/nonexistent")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def guarded(parent: int) -> Callable[[], None]:
    """A ``preexec_fn``: own process group, and SIGKILL when the test process (``parent``) dies."""

    def start() -> None:
        os.setpgrp()
        _set_parent_death_signal(signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)  # the parent died before the signal was asked for: nobody would send it

    return start


def start_guarded(command: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``command`` started under ``guarded``, its output to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=guarded(os.getpid()),  # the guard: own group, parent-death signal
        )


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop the process group: SIGTERM, then SIGKILL after 15 s."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(15)
    except ProcessLookupError:
        pass


@dataclass
class LabelStudioServer:
    url: str
    token: str = field(repr=False)
    username: str
    process: subprocess.Popen[bytes]
    log: Path
    startup_s: float = 0.0

    def env(self) -> dict[str, str]:
        """What ``clcg annotations push/pull`` read."""
        return {"LABEL_STUDIO_URL": self.url, "LABEL_STUDIO_API_KEY": self.token}

    def stop(self) -> None:
        stop_group(self.process)


def _server_env(root: Path, username: str, password: str, token: str) -> dict[str, str]:
    """A clean environment: Label Studio also reads bare names (USERNAME, PORT, DEBUG, ...)."""
    (root / "home").mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "LANG": "C.UTF-8",
        "LABEL_STUDIO_BASE_DATA_DIR": str(root / "data"),
        "LABEL_STUDIO_USERNAME": username,
        "LABEL_STUDIO_PASSWORD": password,
        "LABEL_STUDIO_USER_TOKEN": token,
        # the start-up token is a legacy one ("Authorization: Token ..."), off by default since 1.18
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
        "LABEL_STUDIO_LATEST_VERSION_CHECK": "false",  # no call to PyPI
        "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
        "COLLECT_ANALYTICS": "false",
    }


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/version", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start_label_studio(executable: Path, root: Path) -> LabelStudioServer:
    """A fresh Label Studio on a free port of 127.0.0.1, its data under ``root``; waits until it answers."""
    port = free_port()
    token = secrets.token_hex(20)
    username = "lead@clcg.invalid"
    env = _server_env(root, username, secrets.token_urlsafe(16), token)
    command = [str(executable), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port)]
    log = root / "label-studio.log"
    started = time.perf_counter()
    process = start_guarded(command, env, log)
    server = LabelStudioServer(f"http://127.0.0.1:{port}", token, username, process, log)
    while not _ready(server.url):
        if process.poll() is not None or time.perf_counter() - started > START_TIMEOUT_S:
            server.stop()
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"Label Studio did not start on {server.url} (exit {process.poll()}):\n{tail}")
        time.sleep(0.5)
    server.startup_s = time.perf_counter() - started
    return server


def _json_call(url: str, method: str, token: str, body: object = None) -> Any:
    request = urllib.request.Request(
        url, method=method, data=None if body is None else json.dumps(body).encode()
    )
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Token {token}")
    with urllib.request.urlopen(request, timeout=60) as response:
        data = response.read()
    return json.loads(data) if data else None


@dataclass
class Annotator:
    """A user of the instance acting as themselves (their own token): asks Label Studio for the
    next task, as its editor's "Label All Tasks" does, and submits an annotation of it."""

    server: LabelStudioServer
    user_id: int
    token: str = field(repr=False)

    def next_task(self, project_id: int) -> dict[str, Any]:
        """``GET /api/projects/<id>/next``: the task Label Studio serves this user now (``queue``
        says which of its rules chose it)."""
        return _json_call(f"{self.server.url}/api/projects/{project_id}/next", "GET", self.token)

    def submit(self, task_id: int, result: list[dict[str, Any]]) -> None:
        _json_call(
            f"{self.server.url}/api/tasks/{task_id}/annotations", "POST", self.token, {"result": result}
        )


def sign_up(server: LabelStudioServer, email: str) -> Annotator:
    """A new user, signed up through the organization's invite link as a person would (Label Studio
    offers no API to make a user with a password), and their API token."""
    invite = _json_call(f"{server.url}/api/invite", "GET", server.token)["token"]
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = f"{server.url}/user/signup/?token={invite}"
    browser.open(page, timeout=60).read()
    csrf = next(c.value for c in jar if c.name == "csrftoken")
    form = {"email": email, "password": secrets.token_urlsafe(16), "csrfmiddlewaretoken": csrf}
    request = urllib.request.Request(page, data=urllib.parse.urlencode(form).encode(), method="POST")
    request.add_header("Referer", page)
    browser.open(request, timeout=60).read()
    token = json.loads(browser.open(f"{server.url}/api/current-user/token", timeout=60).read())["token"]
    who = _json_call(f"{server.url}/api/current-user/whoami", "GET", token)
    return Annotator(server, int(who["id"]), token)
