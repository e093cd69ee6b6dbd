"""One demo study per test session, and its release built with a fake API key in the environment."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

from clcg_pipeline_tests.conftest import DEFAULT_CONFIG, cut_to_demo, run_clcg

FAKE_KEY = "clcg-release-test-not-a-key-0d1e2a3d4b5e"
PSEUDONYM_KEY = "release-test-pseudonym-key"


@dataclass(frozen=True)
class Demo:
    config_dir: Path
    data_dir: Path


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """``clcg run`` on the demo (the default config cut to its languages), once per session."""
    root = tmp_path_factory.mktemp("release_demo")
    config_dir = root / "config"
    shutil.copytree(DEFAULT_CONFIG, config_dir)
    cut_to_demo(config_dir)
    env = {**os.environ, "DAGSTER_HOME": str(root / "home")}
    done = run_clcg("run", "--config", str(config_dir), "--data", str(root / "data"), env=env, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    return Demo(config_dir, root / "data")


@pytest.fixture(scope="session")
def release(demo: Demo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The demo's release, built while a (fake) provider key and the pseudonym key are set."""
    from clcg_pipeline.release import build_release

    out = tmp_path_factory.mktemp("release") / "v1"
    with mock.patch.dict(os.environ, {"OPENAI_API_KEY": FAKE_KEY, "CLCG_RELEASE_KEY": PSEUDONYM_KEY}):
        build_release(demo.data_dir, demo.config_dir, out)
    yield out


@pytest.fixture
def local_corpus(tmp_path: Path) -> Path:
    """A local copy of the demo corpus, as a reader would have downloaded it."""
    import importlib.resources

    with importlib.resources.as_file(importlib.resources.files("clcg_pipeline.corpus") / "demo_data") as src:
        shutil.copytree(src, tmp_path / "corpus")
    return tmp_path / "corpus"
