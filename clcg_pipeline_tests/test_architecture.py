"""The architecture contracts of ``make lint``: the private-modules rule catches what it must."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

from lint.bench_imports import private_imports
from lint.private_modules import PrivateModulesContract

ROOT = Path(__file__).resolve().parents[1]


def _graph(*imports: tuple[str, str]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in imports:
        for module in (importer, imported):
            graph.add_module(module)
        graph.add_import(importer=importer, imported=imported, line_number=3, line_contents="from x import y")
    return graph


def _check(graph: grimp.ImportGraph) -> tuple[bool, list[tuple[str, str, tuple[int, ...]]]]:
    contract = PrivateModulesContract(
        name="private", session_options={}, contract_options={"containers": ["pkg"]}
    )
    check = contract.check(graph, verbose=False)
    return check.kept, check.metadata["illegal"]


def test_private_module_of_another_package_is_refused() -> None:
    kept, illegal = _check(
        _graph(
            ("pkg.granularity._predict", "pkg.calls._runner"),  # another package's private module
            ("pkg.granularity._predict", "pkg.calls"),  # its public face: fine
            ("pkg.calls._judge", "pkg.calls._runner"),  # inside one package: fine
            ("pkg.calls._providers.openai", "pkg.calls._requests"),  # a subpackage of the owner: fine
            ("pkg.report.sections", "pkg.calls._providers.openai"),  # private by its parent: refused
        )
    )
    assert not kept
    assert sorted((a, b) for a, b, _ in illegal) == [
        ("pkg.granularity._predict", "pkg.calls._runner"),
        ("pkg.report.sections", "pkg.calls._providers.openai"),
    ]


def test_public_faces_only_is_kept() -> None:
    assert _check(_graph(("pkg.inference._predict", "pkg.calls"), ("pkg.cli", "pkg.orchestration")))[0]


def test_bench_private_import_is_named(tmp_path: Path) -> None:
    script = tmp_path / "bench_probe.py"
    script.write_text(
        "from clcg_pipeline.calls._runner import CallSession\n"
        "from clcg_pipeline.calls import bind\n"
        "from clcg_pipeline.scoring import _hidden\n"
    )
    assert private_imports(script, root=tmp_path) == [
        "bench_probe.py:1: from clcg_pipeline.calls._runner import ...",
        "bench_probe.py:3: from clcg_pipeline.scoring import ...",
    ]


def test_lint_imports_contracts_hold() -> None:
    """The contracts in pyproject.toml hold for the package as it is (what ``make lint`` runs)."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_nothing_shipped_cites_a_document_users_do_not_have() -> None:
    """43 module docstrings cited "STUDY.md section N", a protocol kept outside the repository."""
    shipped = [
        path
        for folder in ("clcg_pipeline", "assets_config", "bench", "docs", "sql")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".yaml", ".yml", ".md", ".sql", ".json"} and path.is_file()
    ] + [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml"]
    citing = [
        str(path.relative_to(ROOT))
        for path in shipped
        if any(
            mark in path.read_text(encoding="utf-8", errors="replace") for mark in ("STUDY.md", "../shared")
        )
    ]
    assert citing == [], citing
