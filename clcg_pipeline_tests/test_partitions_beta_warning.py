"""Every ``clcg run`` (and ``dagster dev``'s code location) printed Dagster's BetaWarning about the
``backfill_policy`` parameter; the single-run policy is on purpose, so ``single_run_policy``
silences exactly that warning wherever the definitions are built, and no other."""

from __future__ import annotations

import warnings
from pathlib import Path

import dagster as dg

from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.partitions import single_run_policy


def test_building_the_definitions_warns_nothing_about_backfill_policy(
    demo_config_dir: Path, tmp_path: Path
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()  # pytest's own filters (pyproject) ignore every BetaWarning
        warnings.simplefilter("always")
        build_definitions(config_dir=demo_config_dir, data_dir=tmp_path / "data")
        warnings.warn("another beta feature", dg.BetaWarning, stacklevel=1)
    said = [str(w.message) for w in caught if issubclass(w.category, dg.BetaWarning)]
    assert not [text for text in said if "backfill_policy" in text], said
    assert "another beta feature" in said  # other beta warnings still show


def test_only_the_backfill_policy_warning_is_silenced() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("always")
        policy = single_run_policy()

        @dg.asset(backfill_policy=policy, partitions_def=dg.StaticPartitionsDefinition(["en"]))
        def answers() -> None: ...

        warnings.warn(
            "Parameter `other` of function `asset` is currently in beta", dg.BetaWarning, stacklevel=1
        )
        warnings.warn("Parameter `backfill_policy` is read", UserWarning, stacklevel=1)
    said = [(w.category, str(w.message)) for w in caught]
    assert not [text for kind, text in said if kind is dg.BetaWarning and "backfill_policy" in text], said
    assert (dg.BetaWarning, "Parameter `other` of function `asset` is currently in beta") in said
    assert (UserWarning, "Parameter `backfill_policy` is read") in said
