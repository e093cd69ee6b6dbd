"""The type checker `make lint` runs: configured for the package, pinned with everything it needs.

Running mypy itself takes minutes; `make lint` does that. These checks keep its setup honest.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import requires, version

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from clcg_pipeline_tests.conftest import PROJECT_ROOT


def _lock() -> dict[str, str]:
    lines = (PROJECT_ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()
    pins = (line.split("==", 1) for line in lines if "==" in line and not line.startswith("#"))
    return {canonicalize_name(name): pinned.strip() for name, pinned in pins}


def _pyproject() -> dict:
    return tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_mypy_checks_the_package_without_silencing_it() -> None:
    """Untyped libraries are named one by one: a global switch would also hide a typo'd import."""
    mypy = _pyproject()["tool"]["mypy"]
    assert mypy["files"] == ["clcg_pipeline"]
    assert mypy["python_version"] == "3.11"
    assert "ignore_missing_imports" not in mypy and "ignore_errors" not in mypy
    for override in mypy.get("overrides", []):
        assert "ignore_errors" not in override, f"[tool.mypy] override {override['module']} ignores errors"


def test_mypy_and_its_requirements_are_pinned_as_installed() -> None:
    lock = _lock()
    dev = [Requirement(r) for r in _pyproject()["project"]["optional-dependencies"]["dev"]]
    wanted = next(r for r in dev if r.name == "mypy")
    assert wanted.specifier.contains(lock["mypy"]), f"requirements.lock: mypy=={lock['mypy']} is not {wanted}"
    assert version("mypy") == lock["mypy"]
    needed = [Requirement(r) for r in requires("mypy") or []]
    for requirement in needed:
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue  # an optional extra of mypy's, or another Python's
        name = canonicalize_name(requirement.name)
        assert name in lock, f"requirements.lock pins no {requirement.name} (mypy needs it)"
        assert version(requirement.name) == lock[name], f"requirements.lock: {name} is not the installed one"
