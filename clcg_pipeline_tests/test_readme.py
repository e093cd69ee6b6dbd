"""README.md: what it points at is in the repository, and the commands it shows run."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd

from clcg_pipeline_tests.conftest import PROJECT_ROOT

README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")


def test_every_document_the_readme_names_is_in_the_repository() -> None:
    """It named STUDY.md sections, a document kept outside the repository."""
    # Files a run writes into the data folder (clcg_data/...) are outputs, not documents.
    named = {n for n in re.findall(r"[\w./-]*\.md\b", README) if not n.startswith("clcg_data/")} - {
        "README.md"
    }
    missing = sorted(name for name in named if not (PROJECT_ROOT / name).is_file())
    assert named and missing == [], missing


def _catalog_example() -> list[str]:
    """The shell lines of the code block that opens a copied catalog."""
    section = README.split("**Opening the catalog elsewhere.**", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block is not None, "no ```bash block under 'Opening the catalog elsewhere'"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_catalog_example_runs_in_a_copied_folder(tmp_path: Path) -> None:
    """It suggested a `duckdb` command-line client that nothing installs."""
    from clcg_pipeline.storage import build_catalog, partition_dir, write_frame

    results = tmp_path / "results"
    predictions = pd.DataFrame({"model": ["m-a", "m-a", "m-b"], "item_id": ["1", "2", "3"]})
    write_frame(partition_dir(results, "predictions", None) / "data.parquet", predictions)
    build_catalog(results)
    cd, command = _catalog_example()
    assert cd == "cd ~/results"
    argv = shlex.split(command)
    assert argv[0] == "python"  # the interpreter the pipeline is installed in
    ran = subprocess.run(
        [sys.executable, *argv[1:]], cwd=results, capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode == 0, ran.stderr
    counts = dict(re.findall(r"│\s*(m-[ab])\s*│\s*(\d+)\s*│", ran.stdout))
    assert counts == {"m-a": "2", "m-b": "1"}, ran.stdout
