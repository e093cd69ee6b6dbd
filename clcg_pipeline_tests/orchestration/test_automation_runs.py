"""How many Dagster runs the daemon's automation launches for a fresh study (issue 32).

The conditions are evaluated in process (``dagster.evaluate_automation_conditions``); what the
daemon launches for a tick's requests follows Dagster's rule for an automation condition
sensor: without ``emit_backfills``, one run per partition key; with it, every asset of the tick
requested for more than one partition goes into one asset backfill, which launches runs as the
assets' backfill policy says (``single_run``: one run over the range). The real daemon doing
this for a new model is ``test_daemon.py``'s slow test. With the real daemon on the demo (7
languages) a study from nothing took 13 Dagster runs, 7 of them the corpus, before the corpus
had its own sensor, and 7 runs, 1 of them the corpus, after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from clcg_pipeline.config import load_config
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.orchestration._jobs import CORPUS_ASSETS

CORPUS = {dg.AssetKey(name) for name in CORPUS_ASSETS}


def _automation_sensors(defs: dg.Definitions) -> list[dg.AutomationConditionSensorDefinition]:
    return [s for s in defs.sensors or [] if isinstance(s, dg.AutomationConditionSensorDefinition)]


def _runs_launched(
    sensor: dg.AutomationConditionSensorDefinition,
    graph: Any,  # Definitions.resolve_asset_graph()
    requested: dict[dg.AssetKey, set[str | None]],
) -> list[tuple[frozenset[dg.AssetKey], frozenset[str | None]]]:
    """The runs the daemon launches for ``sensor``'s share of one tick: (assets, partitions) each."""
    mine = {key: keys for key, keys in requested.items() if key in sensor.asset_selection.resolve(graph)}
    backfilled = {key: keys for key, keys in mine.items() if sensor.emit_backfills and len(keys) > 1}
    runs: dict[str | None, set[dg.AssetKey]] = {}
    for key, keys in mine.items():
        if key not in backfilled:
            for partition in keys:
                runs.setdefault(partition, set()).add(key)
    launched = [(frozenset(assets), frozenset({partition})) for partition, assets in runs.items()]
    policies = {graph.get(key).backfill_policy for key in backfilled}
    if not backfilled:
        return launched
    if policies == {dg.BackfillPolicy.single_run()}:
        launched.append((frozenset(backfilled), frozenset().union(*backfilled.values())))
    else:  # any other policy: one run per partition (the default, and all the test needs)
        launched += [(frozenset({key}), frozenset({p})) for key, keys in backfilled.items() for p in keys]
    return launched


def test_a_fresh_study_loads_its_corpus_in_one_daemon_run_whatever_its_languages(
    demo_config_dir: Path, tmp_path: Path
) -> None:
    """The first tick on a fresh instance requests every language's corpus. Launched directly
    (``study_automation_sensor``, no backfill) that was one run per language, each a fresh
    interpreter parsing the whole source: 7 runs for the demo, 18 for the study. The corpus
    assets now have their own sensor, which emits a backfill, and the corpus multi-asset's
    single-run policy makes it one run over every language."""
    defs = build_definitions(demo_config_dir, tmp_path / "data")
    graph = defs.resolve_asset_graph()
    languages = set(graph.get(dg.AssetKey("articles")).partitions_def.get_partition_keys())  # type: ignore[union-attr]
    assert len(languages) == 7
    with dg.instance_for_test() as instance:
        sync_model_partitions(instance, load_config(demo_config_dir))
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    requested = {
        r.key: set(tick.get_requested_partitions(r.key))
        for r in tick.results
        if tick.get_num_requested(r.key)
    }
    assert {key: requested[key] for key in CORPUS} == dict.fromkeys(CORPUS, languages)
    runs = [run for sensor in _automation_sensors(defs) for run in _runs_launched(sensor, graph, requested)]
    corpus_runs = [(assets, partitions) for assets, partitions in runs if assets & CORPUS]
    assert corpus_runs == [(frozenset(CORPUS), frozenset(languages))], corpus_runs
    (sensor,) = [s for s in _automation_sensors(defs) if CORPUS & set(s.asset_selection.resolve(graph))]
    assert (
        sensor.emit_backfills
        and graph.get(dg.AssetKey("articles")).backfill_policy == dg.BackfillPolicy.single_run()
    )
    # The language panel (unpartitioned, reads nothing) is the tick's only other run.
    assert [assets for assets, _ in runs if not assets & CORPUS] == [frozenset({dg.AssetKey("languages")})]
