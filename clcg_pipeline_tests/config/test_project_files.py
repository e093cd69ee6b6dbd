"""A Dagster home written by an earlier version still loads once its removed launcher is gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from clcg_pipeline.config import ensure_dagster_home, project_path

OLD_HOME_SETTINGS = """\
# Instance settings (copied by an earlier version).
telemetry:
  enabled: false
run_launcher:
  # Forks each run from a preloaded process.
  module: clcg_pipeline.orchestration
  class: PreloadedRunLauncher

run_coordinator:
  module: clcg_pipeline.orchestration
  class: ProviderTaggingRunCoordinator
"""


def test_the_removed_launcher_block_is_dropped_with_a_note_and_a_backup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = tmp_path / "dagster.yaml"
    settings.write_text(OLD_HOME_SETTINGS, encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    ensure_dagster_home()
    text = settings.read_text(encoding="utf-8")
    assert "PreloadedRunLauncher" not in text and "run_launcher" not in text
    # Everything else stays as the user had it, comments included.
    assert "# Instance settings" in text and "class: ProviderTaggingRunCoordinator" in text
    assert (tmp_path / "dagster.yaml.before-default-launcher").read_text(
        encoding="utf-8"
    ) == OLD_HOME_SETTINGS
    assert capsys.readouterr().err.count("PreloadedRunLauncher") == 1
    ensure_dagster_home()  # once: a second call finds nothing to do and says nothing
    assert capsys.readouterr().err == ""


def test_a_launcher_the_user_chose_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = "run_launcher:\n  module: dagster_docker\n  class: DockerRunLauncher\n"
    (tmp_path / "dagster.yaml").write_text(chosen, encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    ensure_dagster_home()
    assert (tmp_path / "dagster.yaml").read_text(encoding="utf-8") == chosen


def test_the_projects_own_settings_load_as_an_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dagster as dg

    (tmp_path / "dagster.yaml").write_text(OLD_HOME_SETTINGS, encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    ensure_dagster_home()
    with dg.DagsterInstance.get() as instance:
        assert type(instance.run_launcher).__name__ == "DefaultRunLauncher"
    assert "\nrun_launcher:" not in project_path("dagster.yaml").read_text(encoding="utf-8")
