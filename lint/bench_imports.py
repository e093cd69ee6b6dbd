"""The private-modules rule for ``bench/``, which is scripts, not a package import-linter reads.

A benchmark uses the project as any other program would: through each package's public
``__init__``. Exits 1 naming every ``from clcg_pipeline.<package>._<module> import ...`` (or an
underscore name imported from a package) it finds.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from lint.private_modules import is_private

ROOT = Path(__file__).resolve().parents[1]


def private_imports(path: Path, root: Path = ROOT) -> list[str]:
    """Each private import in ``path``, as ``file:line: statement`` (``file`` relative to ``root``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "clcg_pipeline":
            names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            if is_private(node.module) or names:
                found.append(f"{path.relative_to(root)}:{node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Import):
            found += [
                f"{path.relative_to(root)}:{node.lineno}: import {a.name}"
                for a in node.names
                if a.name.split(".")[0] == "clcg_pipeline" and is_private(a.name)
            ]
    return found


def main() -> int:
    found = [line for path in sorted((ROOT / "bench").rglob("*.py")) for line in private_imports(path)]
    for line in found:
        print(f"{line} (import it from the package's __init__)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
