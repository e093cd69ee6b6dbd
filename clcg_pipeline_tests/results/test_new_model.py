"""The new model first: found from the calls' payment times, then opening the report and terminal."""

from __future__ import annotations

import pandas as pd
import pytest

from clcg_pipeline.report import new_model_lines, render_report
from clcg_pipeline.results import analysis_times, new_model_block, newest_model
from clcg_pipeline.storage import partition_dir
from clcg_pipeline_tests.report.test_report import _full


def _calls(spans: dict[str, tuple[str, str]], **columns: object) -> pd.DataFrame:
    rows = [
        {"model": model, "paid_at": pd.Timestamp(at, tz="UTC"), "cached": False, "outcome": "ok", **columns}
        for model, times in spans.items()
        for at in times
    ]
    return pd.DataFrame(rows)


def _at(day: str) -> list[pd.Timestamp]:
    return [pd.Timestamp(day, tz="UTC")]


LATER = {"a": ("2026-01-01", "2026-01-02"), "b": ("2026-01-05", "2026-01-06")}


def test_the_newest_model_is_the_one_a_run_added_after_the_others_answered() -> None:
    later = _calls(LATER)
    # The others answered, the study was analysed (Jan 3), then b's first call: b is new.
    assert newest_model(later, ["a", "b"], analysed_at=_at("2026-01-03")) == "b"
    # Run together (overlapping calls): no model is new.
    together = _calls({"a": ("2026-01-01", "2026-01-03"), "b": ("2026-01-02", "2026-01-04")})
    assert newest_model(together, ["a", "b"], analysed_at=_at("2026-01-05")) is None
    # One model, no calls, or the newest model not evaluated: nothing to say.
    assert newest_model(_calls({"a": ("2026-01-01", "2026-01-02")}), ["a"], analysed_at=[]) is None
    assert newest_model(pd.DataFrame(), ["a", "b"], analysed_at=[]) is None
    assert newest_model(later, ["a"], analysed_at=_at("2026-01-03")) is None


def test_a_study_built_with_all_its_models_at_once_has_none() -> None:
    """One clcg run answers model after model, then analyses once: b came after a, but no
    analysis lies between them (the old rule named b "added after all the others")."""
    later = _calls(LATER)
    assert newest_model(later, ["a", "b"], analysed_at=[]) is None
    assert newest_model(later, ["a", "b"], analysed_at=_at("2026-01-07")) is None  # analysed after both
    assert newest_model(later, ["a", "b"], analysed_at=_at("2025-12-31")) is None  # before either


def test_only_paid_calls_count() -> None:
    """Cached calls, calls skipped for the budget or waiting in a batch were not paid then."""
    cached = pd.concat([_calls(LATER), _calls({"a": ("2026-01-10",)}, cached=True)], ignore_index=True)
    assert newest_model(cached, ["a", "b"], analysed_at=_at("2026-01-03")) == "b"
    skipped = pd.concat([_calls(LATER), _calls({"a": ("2026-01-10",)}, outcome="skipped_budget")])
    assert newest_model(skipped, ["a", "b"], analysed_at=_at("2026-01-03")) == "b"
    # A model whose every call was found in the cache paid nothing: never new, and not in the order.
    all_cached = pd.concat([_calls(LATER), _calls({"c": ("2026-01-10",)}, cached=True)])
    assert newest_model(all_cached, ["a", "b", "c"], analysed_at=_at("2026-01-03")) == "b"
    only_one_paid = pd.concat([_calls({"a": LATER["a"]}), _calls({"c": ("2026-01-10",)}, cached=True)])
    assert newest_model(only_one_paid, ["a", "c"], analysed_at=_at("2026-01-03")) is None


def test_analysis_times_are_this_folders_study_results(tmp_path) -> None:
    import dagster as dg

    with dg.instance_for_test() as instance:
        for folder in ("mine", "other"):
            path = partition_dir(str(tmp_path / folder), "study_results", None).parent / "study_results.json"
            instance.report_runless_asset_event(
                dg.AssetMaterialization("study_results", metadata={"path": dg.MetadataValue.path(str(path))})
            )
        assert len(analysis_times(instance, str(tmp_path / "mine"))) == 1
        assert analysis_times(instance, str(tmp_path / "none")) == []


def _results() -> dict:
    results = _full()
    gap = {"estimate": 0.08, "ci_low": 0.07, "ci_high": 0.09}
    results["h1"]["by_model"]["new-m"] = {"h1_micro": gap}
    results["model_contrasts"] = {
        "models": ["gpt-x", "claude-y", "new-m"],
        "ranks": {"new-m": {"h1_micro": {"estimate": 2.0, "ci_low": 1.0, "ci_high": 3.0}}},
        "pairs": {
            # new-m is second here: its difference is read with the sign turned.
            "gpt-x vs new-m": {
                "model_a": "gpt-x",
                "model_b": "new-m",
                "h1_micro": {"estimate": -0.02, "ci_low": -0.03, "ci_high": -0.01, "p_adj": 0.01},
            },
            "new-m vs claude-y": {
                "model_a": "new-m",
                "model_b": "claude-y",
                "h1_micro": {"estimate": -0.021, "identifiable": False, "reason": "too few articles"},
            },
            "gpt-x vs claude-y": {"model_a": "gpt-x", "model_b": "claude-y", "h1_micro": {"estimate": 0.0}},
        },
    }
    return results


def test_the_block_reads_each_difference_as_the_new_model_minus_the_other() -> None:
    block = new_model_block(_results(), "new-m")
    assert block["n_models"] == 3 and block["rank"]["estimate"] == 2.0 and block["clcg"]["estimate"] == 0.08
    by_other = {d["other"]: d for d in block["differences"]}
    assert set(by_other) == {"gpt-x", "claude-y"}
    assert (by_other["gpt-x"]["estimate"], by_other["gpt-x"]["ci_low"], by_other["gpt-x"]["ci_high"]) == (
        pytest.approx(0.02),
        pytest.approx(0.01),
        pytest.approx(0.03),
    )
    assert by_other["claude-y"]["estimate"] == pytest.approx(-0.021)


def test_the_report_and_the_terminal_open_with_it() -> None:
    results = _results()
    results["new_model"] = new_model_block(results, "new-m")
    html = render_report(results, None)
    assert html.index('id="new-model"') < html.index('id="h1"')
    assert "New model: new-m" in html and "rank 2 of 3 (interval 1\u20133)" in html
    # One section: the generic results renderer no longer dumps the block a second time.
    assert html.count("New model: new-m") == 1 and 'id="result-new_model"' not in html
    assert "Ci high" not in html and "Valid replicates" not in html
    lines = new_model_lines(results)
    assert lines[0].startswith("new model new-m: H1 micro CLCG 0.0800 [0.0700, 0.0900]; rank 2 of 3")
    assert "  new-m minus gpt-x: 0.0200 [0.0100, 0.0300], p (adj.) 0.010" in lines
    assert any("minus claude-y" in line and "not identifiable: too few articles" in line for line in lines)
    assert new_model_lines(_full()) == [] and 'id="new-model"' not in render_report(_full(), None)


def test_model_contrasts_read_as_one_table_of_pairs_and_one_of_ranks() -> None:
    results = _results()
    results["model_contrasts"]["ranks"]["gpt-x"] = {
        "h1_micro": {"estimate": 1.0, "ci_low": 1.0, "ci_high": 2.0}
    }
    html = render_report(results, None)
    start = html.index('id="result-model_contrasts"')
    section = html[start : html.index("</section>", start)]
    assert section.count("<table") == 2  # pairs and ranks (no English scores here): not one per pair
    assert "gpt-x vs new-m (H1 micro)" in section and "1 (1\u20132)" in section
