"""Build hook: ship the top-level project files inside the wheel (metadata lives in pyproject.toml).

DESIGN.md keeps ``sql/``, ``assets_config/`` and ``dagster.yaml`` at the top of the repository,
and they stay the source of truth there. A wheel only installs packages, so a plain build
left them out (named queries vanished, the default config folder was not found). setuptools'
declarative ``package-dir`` cannot add a folder from outside the package to a package found
by ``packages.find``, hence this small ``build_py`` step that copies them into the built
package as ``clcg_pipeline/_project/``; ``clcg_pipeline._project_files`` looks there first.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PROJECT_FILES = ("sql", "assets_config", "dagster.yaml", "dagster.postgres.yaml")  # as in _project_files.py


class BuildPyWithProjectFiles(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's own folders
        target = Path(self.build_lib) / "clcg_pipeline" / "_project"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in PROJECT_FILES:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", ".*"))
            else:
                shutil.copy2(source, target / name)


setup(cmdclass={"build_py": BuildPyWithProjectFiles})
