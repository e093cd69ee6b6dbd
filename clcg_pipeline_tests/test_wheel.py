"""A wheel install works outside the checkout: named queries, the default config, dagster.yaml.

The wheel is built from a copy of the source tree (no network: the build reuses this
environment's setuptools) and installed into a fresh venv that reuses this environment's
packages through a ``.pth`` file, so nothing is downloaded and the test stays fast.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from clcg_pipeline_tests.conftest import PROJECT_ROOT

pytestmark = pytest.mark.slow

# Only what a wheel is built from (tests, benchmarks and local state would just slow the copy;
# ``.venv*`` also covers Label Studio's own 1 GB venv beside the project's).
_SKIP = shutil.ignore_patterns(
    ".venv*", ".git", "build", "dist", "*.egg-info", "clcg_data", ".dagster_home", "__pycache__", ".*cache",
    "clcg_pipeline_tests", "bench", "docs",
)  # fmt: skip


def _run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done


def test_the_build_tools_are_the_pinned_ones() -> None:
    """The wheel is built without build isolation, so with this environment's setuptools: the
    one requirements.lock pins (a bare Python 3.11 venv has setuptools 65, without bdist_wheel)."""
    import tomllib
    from importlib.metadata import version

    from packaging.requirements import Requirement

    lock = dict(
        line.split("==", 1)
        for line in (PROJECT_ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()
        if "==" in line and not line.startswith("#")
    )
    build = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]
    for requirement in map(Requirement, build["requires"]):
        pinned = lock.get(requirement.name)
        assert pinned is not None, (
            f"requirements.lock pins no {requirement.name} (pyproject.toml's build-system)"
        )
        assert requirement.specifier.contains(pinned), (
            f"requirements.lock: {requirement.name}=={pinned} is not {requirement}"
        )
        assert version(requirement.name) == pinned, (
            f"{requirement.name} {version(requirement.name)} is installed, {pinned} pinned: run make setup"
        )
    assert "wheel" in lock


def test_wheel_ships_queries_config_and_dagster_yaml(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(PROJECT_ROOT, source, ignore=_SKIP)
    dist = tmp_path / "dist"
    build = ("wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), ".")
    _run(sys.executable, "-m", "pip", *build, cwd=source)
    (wheel,) = dist.glob("clcg_pipeline-*.whl")

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", str(venv), cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(
        _run(
            str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path
        ).stdout.strip()
    )
    # Reuse this environment's dependencies (like --system-site-packages, but for a venv).
    (site / "_reuse_test_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    _run(sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
         str(wheel), cwd=tmp_path)  # fmt: skip

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CLCG_CONFIG_DIR", "PYTHONPATH")}
    listed = _run(str(venv / "bin" / "clcg"), "query", "--list", cwd=outside, env=env)
    assert {"clcg_by_language", "clcg_by_model", "clcg_by_class", "call_costs"} <= {
        line.split()[0] for line in listed.stdout.splitlines() if line.strip()
    }
    probe = (
        "import json, clcg_pipeline\n"
        "from clcg_pipeline.config._project_files import project_path\n"
        "from clcg_pipeline.config import default_config_dir, load_config\n"
        "from clcg_pipeline.storage._catalog import SQL_DIR\n"
        "config = load_config()\n"
        "print(json.dumps({'package': clcg_pipeline.__file__, 'config': str(default_config_dir()),\n"
        "  'sql': str(SQL_DIR), 'dagster_yaml': str(project_path('dagster.yaml')),\n"
        "  'yaml_exists': project_path('dagster.yaml').is_file(),\n"
        "  'postgres_yaml': str(project_path('dagster.postgres.yaml')),\n"
        "  'postgres_yaml_exists': project_path('dagster.postgres.yaml').is_file(),\n"
        "  'languages': len(config.languages.isos)}))\n"
    )
    found = json.loads(_run(str(python), "-c", probe, cwd=outside, env=env).stdout)
    installed = str(site / "clcg_pipeline")
    assert found["package"].startswith(installed), found  # the wheel, not the checkout
    for key in ("config", "sql", "dagster_yaml", "postgres_yaml"):
        assert found[key].startswith(installed), found
    assert found["yaml_exists"] and found["languages"] >= 3
    # The documented PostgreSQL instance file ships too (docs/DEPLOY.md: no checkout needed).
    assert found["postgres_yaml_exists"], found
