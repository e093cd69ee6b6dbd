"""Where the project's non-Python files are: ``sql/``, ``assets_config/`` and ``dagster.yaml``.

DESIGN.md keeps them at the top of the repository, which is the source of truth in a
checkout. A wheel cannot install top-level folders into site-packages, so ``setup.py`` copies
them into the package as ``clcg_pipeline/_project/`` at build time; this module looks there
first (an installed wheel) and falls back to the checkout. No third-party imports: the config
package and ``clcg --help`` use it.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# The ``clcg_pipeline`` package folder (this module sits in its ``config`` package).
_PACKAGE = Path(__file__).resolve().parent.parent
BUNDLE_DIR = "_project"
PROJECT_FILES = ("sql", "assets_config", "dagster.yaml", "dagster.postgres.yaml")


def project_path(name: str) -> Path:
    """A name of ``PROJECT_FILES`` from the installed wheel, else the checkout."""
    if name not in PROJECT_FILES:
        raise ValueError(f"not a project file: {name!r} (one of {', '.join(PROJECT_FILES)})")
    bundled = _PACKAGE / BUNDLE_DIR / name
    # The wheel's copy first: in an install, the folder above the package is site-packages,
    # where an unrelated top-level ``sql`` folder could sit.
    return bundled if bundled.exists() else _PACKAGE.parent / name


def ensure_dagster_home() -> Path:
    """Point ``DAGSTER_HOME`` at a persistent folder (default ``.dagster_home`` in the project).

    Without it Dagster uses a temporary instance and dynamic partitions vanish (DESIGN.md).
    The project's dagster.yaml is copied there only when the folder has none: a
    ``DAGSTER_HOME`` set by the user keeps its own settings (e.g. PostgreSQL storage).
    """
    home = Path(os.environ.get("DAGSTER_HOME") or _PACKAGE.parent / ".dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    settings = home / "dagster.yaml"
    template = project_path("dagster.yaml")
    if template.exists() and not settings.exists():
        shutil.copyfile(template, settings)
    elif settings.exists():
        drop_removed_run_launcher(settings)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


# The run launcher earlier versions wrote into the dagster.yaml they copied: the class is gone
# (runs use Dagster's DefaultRunLauncher), and an instance naming it no longer loads.
_REMOVED_LAUNCHER = "PreloadedRunLauncher"


def drop_removed_run_launcher(settings: Path) -> bool:
    """Remove the ``run_launcher`` block naming the removed launcher from ``settings``; True if it did.

    Only that block goes, by its lines, so the user's other settings and comments stay; the
    file as it was is kept beside it (``dagster.yaml.before-default-launcher``) and one line
    on stderr says so. A ``run_launcher`` the user chose (Docker, Kubernetes) is not touched.
    """
    text = settings.read_text(encoding="utf-8")
    if _REMOVED_LAUNCHER not in text:
        return False
    kept: list[str] = []
    block: list[str] = []
    for line in text.splitlines(keepends=True):
        if block and (line.startswith((" ", "\t")) or not line.strip()):
            block.append(line)
            continue
        if block:
            kept.extend(block if not any(_REMOVED_LAUNCHER in b for b in block) else [])
            block = []
        if line.startswith("run_launcher:"):
            block = [line]
        else:
            kept.append(line)
    if block and not any(_REMOVED_LAUNCHER in b for b in block):
        kept.extend(block)
    new_text = "".join(kept)
    if new_text == text:
        return False
    backup = settings.with_name(settings.name + ".before-default-launcher")
    shutil.copyfile(settings, backup)
    settings.write_text(new_text, encoding="utf-8")
    print(
        f"note: {settings}: removed the run_launcher block naming {_REMOVED_LAUNCHER} (no longer part "
        f"of clcg-pipeline; runs use Dagster's default launcher); the previous file is {backup}",
        file=sys.stderr,
    )
    return True
