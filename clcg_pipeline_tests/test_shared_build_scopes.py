"""The modules that start from a shared build are the ones the xdist scheduler groups.

``small_study`` and ``demo_study`` are built once per xdist worker; a module that requests one
but is missing from its list (``SMALL_STUDY_MODULES``, ``DEMO_STUDY_MODULES``) lands on the
other worker too, which then builds a second copy: the suite only gets slower, no test fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from clcg_pipeline_tests.conftest import PROJECT_ROOT, SMALL_STUDY_MODULES
from clcg_pipeline_tests.demo_study import DEMO_STUDY_MODULES

TESTS = PROJECT_ROOT / "clcg_pipeline_tests"


def modules_requesting(fixture: str, root: Path = TESTS) -> set[str]:
    """Every test module or conftest under ``root`` with a function taking ``fixture`` as an argument."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and fixture in {a.arg for a in node.args.args}:
                found.add(path.relative_to(root.parent).as_posix())
    return found


@pytest.mark.parametrize(
    ("fixture", "grouped", "defined_in"),
    [
        ("small_study", SMALL_STUDY_MODULES, "clcg_pipeline_tests/conftest.py"),
        ("demo_study", DEMO_STUDY_MODULES, "clcg_pipeline_tests/conftest.py"),
    ],
)
def test_every_module_using_a_shared_build_is_in_its_scope(
    fixture: str, grouped: tuple[str, ...], defined_in: str
) -> None:
    users = modules_requesting(fixture) - {defined_in}
    assert users, fixture
    ungrouped = sorted(module for module in users if not module.startswith(grouped))
    assert ungrouped == [], f"add them to the list of modules that share {fixture}"


def test_a_module_requesting_the_fixture_is_found(tmp_path: Path) -> None:
    (tmp_path / "clcg_pipeline_tests").mkdir()
    (tmp_path / "clcg_pipeline_tests" / "test_x.py").write_text("def test_a(small_study):\n    pass\n")
    (tmp_path / "clcg_pipeline_tests" / "test_y.py").write_text("def test_b(tmp_path):\n    pass\n")
    found = modules_requesting("small_study", tmp_path / "clcg_pipeline_tests")
    assert found == {"clcg_pipeline_tests/test_x.py"}
