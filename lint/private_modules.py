"""An import-linter contract: a package's private modules are for that package alone.

import-linter's own contracts match whole dotted segments, so "any module whose name starts
with an underscore, inside any of the project's packages" cannot be written as one of them;
hence this small contract type. A module is private when any segment of its path below the
top package (``clcg_pipeline.calls._runner``, ``clcg_pipeline.calls._providers.openai``)
starts with an underscore; it may be imported only from inside the package that owns it
(the first segment below the top package). Everything else goes through the package's
public ``__init__``.
"""

from __future__ import annotations

import grimp
from importlinter import Contract, ContractCheck, fields, output


def owner(module: str, top: str) -> str | None:
    """The package below ``top`` that owns ``module`` (``clcg_pipeline.calls``), or None for ``top``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == top and len(parts) > 1 else None


def is_private(module: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in module.split(".")[1:])


class PrivateModulesContract(Contract):
    """Modules of ``containers`` whose path has an ``_underscore`` segment are imported only by
    their own package (the container's direct subpackage or module that holds them)."""

    type_name = "private_modules"

    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        illegal: list[tuple[str, str, tuple[int, ...]]] = []
        for top in self.containers:  # type: ignore[attr-defined]
            for imported in sorted(m for m in graph.modules if m.startswith(top + ".") and is_private(m)):
                home = owner(imported, top)
                for importer in sorted(graph.find_modules_that_directly_import(imported)):
                    if owner(importer, top) == home:
                        continue
                    lines = tuple(
                        d["line_number"]
                        for d in graph.get_import_details(importer=importer, imported=imported)
                    )
                    illegal.append((importer, imported, lines))
        return ContractCheck(kept=not illegal, metadata={"illegal": illegal})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, lines in check.metadata["illegal"]:
            where = ", ".join(f"l.{n}" for n in lines)
            output.print_error(f"{importer} -> {imported} ({where}): import it from its package's __init__")
            output.new_line()
