"""The error-taxonomy analysis on crafted frames whose statistics are known by hand."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from clcg_pipeline.analysis import withheld_reason
from clcg_pipeline.config import ProjectConfig, default_config_dir, load_config
from clcg_pipeline.synthetic import synthetic_frames
from clcg_pipeline.validation.taxonomy import AnalysisInputs, analyse_error_taxonomy, load_taxonomy
from clcg_pipeline.validation.taxonomy._inputs import inputs_from_config, model_family
from clcg_pipeline.validation.taxonomy._judges import kappa_rows
from clcg_pipeline.validation.taxonomy.assets import build_error_taxonomy_analysis_defs
from clcg_pipeline_tests.conftest import materialize

TAXONOMY = load_taxonomy("clcg-error-v1")
LABELS = TAXONOMY.labels
C, P = "correct", "partial_or_omission"


@pytest.fixture(scope="module")
def config() -> ProjectConfig:
    return load_config(default_config_dir())


def _inputs(
    min_articles: int = 10, judges: tuple[str, ...] = ("ja", "jb"), **families: str
) -> AnalysisInputs:
    return AnalysisInputs(
        judges=judges,
        families={"ja": "alpha", "jb": "beta", "mx": "gamma", **families},
        joshi={"sw": 2, "fon": 0},
        replicates=300,
        seed=7,
        confidence=0.95,
        min_articles=min_articles,
    )


def crafted(n_articles: int = 20) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """20 pairs; EN correct for both judges. Targets: A 10 correct / 10 partial; B agrees on 8
    correct and 6 partial, says partial where A says correct twice and correct where A says
    partial four times. Delta 0.1 where A says correct, 0.5 where A says partial."""
    tgt_a = [C] * 10 + [P] * 10
    tgt_b = [C] * 8 + [P] * 2 + [P] * 6 + [C] * 4
    sample = pd.DataFrame(
        {
            "pair_id": [f"p{i:02d}" for i in range(20)],
            "model": "mx",
            "doc_id": [f"d{i % n_articles:02d}" for i in range(20)],
            "item_id": [f"i{i}" for i in range(20)],
            "rep": 0,
            "language": ["sw", "fon"] * 10,
            "en_score": 0.9,
            "score_delta": [0.1 if t == C else 0.5 for t in tgt_a],
            "candidate_loss": [t == P for t in tgt_a],
        }
    )
    sample["target_score"] = sample["en_score"] - sample["score_delta"]
    rows = []
    for judge, targets in (("ja", tgt_a), ("jb", tgt_b)):
        for i, target in enumerate(targets):
            for side, label in (("en", C), ("target", target)):
                rows.append(
                    {"pair_id": f"p{i:02d}", "side": side, "judge": judge, "label": label, "status": "ok"}
                )
    return (
        sample,
        pd.DataFrame(rows),
        pd.DataFrame(columns=["pair_id", "judge", "order", "preferred", "status"]),
    )


def test_kappa_and_percent_match_hand_computed_values(config: ProjectConfig) -> None:
    sample, judgements, order = crafted()
    doc = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config).results
    by_level = {a["level"]: a for a in doc["agreement"]}
    # Sides (40): correct/correct 28, correct/partial 2, partial/correct 4, partial/partial 6.
    # po = 34/40 = 0.85; pe = (30*32 + 10*8)/40^2 = 0.65; kappa = 0.2/0.35 = 4/7.
    assert by_level["fine"]["percent"] == pytest.approx(0.85)
    assert by_level["fine"]["kappa"] == pytest.approx(4 / 7)
    assert by_level["fine"]["n"] == 40
    # correct and partial keep their names when collapsed; partial is a semantic error.
    assert by_level["collapsed"]["kappa"] == pytest.approx(4 / 7)
    assert by_level["binary"]["kappa"] == pytest.approx(4 / 7)
    # Pairs (20) on crosslingual_loss: 8 neither, 2 B only, 4 A only, 6 both: po 0.7, pe 0.5, kappa 0.4.
    assert by_level["crosslingual_loss"]["percent"] == pytest.approx(0.7)
    assert by_level["crosslingual_loss"]["kappa"] == pytest.approx(0.4)
    assert by_level["crosslingual_loss"]["n"] == 20


def test_vectorised_kappa_equals_statsmodels() -> None:
    rng = np.random.default_rng(3)
    tables = rng.integers(0, 30, size=(25, 4, 4)).astype(float)
    pct, kap = kappa_rows(tables)
    for table, p, k in zip(tables, pct, kap, strict=True):
        assert k == pytest.approx(cohens_kappa(table, return_results=False))
        assert p == pytest.approx(np.trace(table) / table.sum())
    # One category only: chance agreement is 1 and kappa is undefined, not 0 or 1.
    assert np.isnan(kappa_rows(np.array([[[5.0, 0.0], [0.0, 0.0]]]))[1][0])


def test_transitions_and_crosslingual_loss_definition(config: ProjectConfig) -> None:
    sample, judgements, order = crafted()
    # Pair p19: EN side not correct for judge A. It is no loss (a pair condition, not a label),
    # but it stays in the denominator.
    judgements.loc[
        (judgements["pair_id"] == "p19") & (judgements["judge"] == "ja") & (judgements["side"] == "en"),
        "label",
    ] = "refusal"
    doc = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config).results
    trans = {(t["judge"], t["en_label"], t["target_label"]): t["n"] for t in doc["transitions"]}
    assert trans[("ja", C, C)] == 10 and trans[("ja", C, P)] == 9 and trans[("ja", "refusal", P)] == 1
    assert sum(n for (j, *_), n in trans.items() if j == "jb") == 20
    loss = {(x["judge"], x["group"]): x for x in doc["crosslingual_loss"]}
    assert loss[("ja", "all")]["estimate"] == pytest.approx(9 / 20) and loss[("ja", "all")]["n"] == 20
    assert loss[("jb", "all")]["estimate"] == pytest.approx(8 / 20)
    # Per Joshi class and language: odd pairs are Fon (class 0); A's losses p10..p18 -> p11,13,15,17 in Fon.
    assert loss[("ja", "joshi_class=0")]["estimate"] == pytest.approx(4 / 10)
    assert loss[("ja", "language=fon")]["estimate"] == pytest.approx(4 / 10)
    assert loss[("ja", "joshi_class=2")]["estimate"] == pytest.approx(5 / 10)
    assert "crosslingual_loss" not in {f["label"] for f in doc["label_frequencies"]}


def test_label_frequencies_per_side_list_every_label(config: ProjectConfig) -> None:
    sample, judgements, order = crafted()
    doc = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config).results
    freq = {(f["judge"], f["side"], f["label"]): f for f in doc["label_frequencies"]}
    assert len(freq) == 2 * 2 * len(LABELS)
    assert freq[("ja", "en", C)]["share"] == 1.0 and freq[("ja", "en", P)]["share"] == 0.0
    assert freq[("jb", "target", P)]["share"] == pytest.approx(8 / 20) and freq[("jb", "target", P)]["n"] == 8


def test_contributions_sum_to_the_delta(config: ProjectConfig) -> None:
    sample, judgements, order = crafted()
    doc = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config).results
    contrib = {(c["judge"], c["label"]): c for c in doc["delta_contribution"]}
    assert contrib[("ja", C)]["frequency"] == pytest.approx(0.5)
    assert contrib[("ja", C)]["mean_loss"] == pytest.approx(0.1)
    assert contrib[("ja", C)]["contribution"] == pytest.approx(0.05)
    assert contrib[("ja", P)]["contribution"] == pytest.approx(0.25)
    assert (
        contrib[("ja", "refusal")]["contribution"] == 0.0 and contrib[("ja", "refusal")]["mean_loss"] is None
    )
    delta = {d["judge"]: d["estimate"] for d in doc["delta"]}
    assert delta["ja"] == pytest.approx(0.3) == pytest.approx(sample["score_delta"].mean())
    # On noisy synthetic frames too, for each judge (with some judgements unparseable).
    s, j, o = synthetic_frames(400, 30, judges=("ja", "jb"), labels=LABELS, languages={"sw": 2}, seed=1)
    doc = analyse_error_taxonomy(s, j, o, TAXONOMY, _inputs(), config).results
    for d in doc["delta"]:
        total = sum(c["contribution"] for c in doc["delta_contribution"] if c["judge"] == d["judge"])
        assert total == pytest.approx(d["estimate"], abs=1e-12)
        usable = j[(j["judge"] == d["judge"]) & (j["side"] == "target") & (j["status"] == "ok")]
        assert d["estimate"] == pytest.approx(
            s.set_index("pair_id").loc[usable["pair_id"], "score_delta"].mean()
        )


def test_flip_rate_reads_preferred_as_the_response(config: ProjectConfig) -> None:
    sample, judgements, _ = crafted()
    rows = []
    for i in range(10):
        pid = f"p{i:02d}"
        # en_first: position A is EN. target_first: position B is EN, so "B" is the same choice.
        rows.append({"pair_id": pid, "judge": "ja", "order": "en_first", "preferred": "A", "status": "ok"})
        flipped = i < 3  # pairs 0-2 change their mind
        rows.append(
            {
                "pair_id": pid,
                "judge": "ja",
                "order": "target_first",
                "preferred": "A" if flipped else "B",
                "status": "ok",
            }
        )
        rows.append({"pair_id": pid, "judge": "jb", "order": "en_first", "preferred": "en", "status": "ok"})
        rows.append(
            {
                "pair_id": pid,
                "judge": "jb",
                "order": "target_first",
                "preferred": "target" if i == 0 else "en",
                "status": "unparseable" if i == 9 else "ok",
            }
        )
    doc = analyse_error_taxonomy(sample, judgements, pd.DataFrame(rows), TAXONOMY, _inputs(), config).results
    bias = {b["judge"]: b for b in doc["order_bias"]}
    assert bias["ja"]["pairs"] == 10 and bias["ja"]["flip_rate"] == pytest.approx(0.3)
    # Judge B: pair 9's second judgement is unparseable, so 9 pairs, 1 flip.
    assert bias["jb"]["pairs"] == 9 and bias["jb"]["flip_rate"] == pytest.approx(1 / 9)
    bad = pd.DataFrame([{**rows[0], "preferred": "maybe"}])
    with pytest.raises(ValueError, match=r"order_bias_judgements.*record 0.*'preferred'.*maybe"):
        analyse_error_taxonomy(sample, judgements, bad, TAXONOMY, _inputs(), config)


def test_intervals_withheld_below_min_articles_and_present_above(config: ProjectConfig) -> None:
    sample, judgements, order = crafted(n_articles=5)
    few = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config)
    assert few.results["status"] == "not_identifiable"
    assert "too few articles: 5 < study.min_articles = 10" in few.results["reason"]
    assert few.estimates["ci_low"].isna().all() and few.estimates["ci_high"].isna().all()
    assert few.estimates["status"].str.startswith("not identifiable: ").all()
    described = few.estimates[few.estimates["estimate"].notna()]
    assert described["status"].str.startswith("not identifiable: too few articles").all()
    assert few.results["crosslingual_loss"][0]["estimate"] == pytest.approx(0.5)  # still described

    sample, judgements, order = crafted(n_articles=20)
    many = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config)
    assert many.results["status"] == "ok"
    loss = many.results["crosslingual_loss"][0]
    assert loss["ci_low"] is not None and loss["ci_low"] <= loss["estimate"] <= loss["ci_high"]
    kappa = many.results["agreement"][0]
    assert kappa["ci_low"] < kappa["kappa"] < kappa["ci_high"]
    shown = many.estimates[many.estimates["estimand"] == "crosslingual_loss"]
    assert (shown["status"] == "estimated").all() and shown["ci_low"].notna().all()
    json.dumps(many.results)  # the document is plain JSON


def test_the_study_reason_is_the_suites_rule_said_once(config: ProjectConfig) -> None:
    """Issue 34: the study's status says exactly what the rule (and each withheld estimand) says."""
    sample, judgements, order = crafted(n_articles=5)
    few = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config)
    rule = withheld_reason(0.0, 5, 10)
    assert few.results["reason"] == rule
    assert set(few.estimates.loc[few.estimates["estimate"].notna(), "status"]) == {
        f"not identifiable: {rule}"
    }
    assert sum(rule in c for c in few.results["caveats"]) == 1


def _unexplained(node: object, path: str = "") -> list[str]:
    """Where ``node`` holds a block marked ``identifiable: False`` that gives no reason."""
    if isinstance(node, dict):
        here = [path] if node.get("identifiable") is False and not node.get("reason") else []
        return here + [hit for k, v in node.items() for hit in _unexplained(v, f"{path}/{k}")]
    if isinstance(node, list):
        return [hit for i, v in enumerate(node) for hit in _unexplained(v, f"{path}/{i}")]
    return []


def test_every_withheld_row_carries_the_rules_reason(config: ProjectConfig) -> None:
    """Issue 34: the loss, delta and agreement rows say why they are withheld (the rule's words,
    as the estimates table's status), so the report need not say "no reason recorded"."""
    sample, judgements, order = crafted(n_articles=5)
    few = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config).results
    rule = withheld_reason(0.0, 5, 10)
    for key in ("crosslingual_loss", "delta", "agreement"):
        assert few[key] and all(r["identifiable"] is False for r in few[key]), key
        assert {r["reason"] for r in few[key] if r.get("kappa", r.get("estimate")) is not None} == {rule}, key
    assert _unexplained(few) == []
    sample, judgements, order = crafted(n_articles=20)
    many = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config).results
    loss = many["crosslingual_loss"][0]
    assert loss["identifiable"] and loss["reason"] is None and loss["ci_low"] is not None


def test_unparseable_and_missing_are_excluded_and_counted(config: ProjectConfig) -> None:
    sample, judgements, order = crafted()
    target_a = (judgements["judge"] == "ja") & (judgements["side"] == "target")
    # Two of A's partial targets become unparseable / refused; one of B's EN rows disappears.
    judgements.loc[target_a & judgements["pair_id"].isin(["p18", "p19"]), "status"] = [
        "unparseable",
        "refused",
    ]
    judgements.loc[target_a & judgements["pair_id"].isin(["p18", "p19"]), "label"] = None
    judgements = judgements.drop(
        judgements.index[
            (judgements["judge"] == "jb") & (judgements["pair_id"] == "p00") & (judgements["side"] == "en")
        ]
    )
    doc = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config).results
    excluded = {(e["judge"], e["side"], e["status"]): e["n"] for e in doc["excluded"]}
    assert excluded == {("ja", "target", "unparseable"): 1, ("ja", "target", "refused"): 1}
    judges = {j["judge"]: j for j in doc["judges"]}
    assert judges["ja"]["ok"] == 38 and judges["ja"]["excluded"] == {"unparseable": 1, "refused": 1}
    assert judges["jb"]["absent"] == 1
    freq = {(f["judge"], f["side"], f["label"]): f for f in doc["label_frequencies"]}
    assert freq[("ja", "target", P)]["total"] == 18 and freq[("ja", "target", P)]["n"] == 8
    loss = {(x["judge"], x["group"]): x for x in doc["crosslingual_loss"]}
    assert loss[("ja", "all")]["n"] == 18 and loss[("ja", "all")]["estimate"] == pytest.approx(8 / 18)
    assert any("2 judgement(s) unparseable" in c for c in doc["caveats"])
    assert not any(v in {f["label"] for f in doc["label_frequencies"]} for v in ("unparseable", None))


def test_self_preference_needs_a_shared_family(config: ProjectConfig) -> None:
    sample, judgements, order = crafted()
    doc = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config).results
    assert all(not s["identifiable"] and "family" in s["reason"] for s in doc["self_preference"])
    # The reason is said once: the state is the flag, not repeated in the reason's words.
    assert not any(s["reason"].startswith("not identifiable") for s in doc["self_preference"])
    assert any("self-preference not identifiable" in c for c in doc["caveats"])
    # Half the pairs by a model of judge A's family; A calls every own-family target correct.
    sample["model"] = ["own"] * 10 + ["mx"] * 10
    judgements.loc[judgements["judge"] == "ja", "label"] = [C, C] * 10 + [C, P] * 10
    doc = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(own="alpha"), config).results
    pref = {s["judge"]: s for s in doc["self_preference"]}
    assert pref["ja"]["own_rate"] == 1.0 and pref["ja"]["other_rate"] == pytest.approx(0.5)
    assert pref["ja"]["difference"] == pytest.approx(0.5) and pref["ja"]["identifiable"]
    # B rates the same own-family responses: 18/20 correct vs 14/20 -> B's own-vs-other 0.2; excess 0.3.
    assert pref["ja"]["excess"] == pytest.approx(0.5 - (18 / 20 - 14 / 20))


def test_skipped_without_judges_or_pairs_and_bad_labels_named(config: ProjectConfig) -> None:
    sample, judgements, order = crafted()
    none = analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(judges=()), config).results
    assert none["status"] == "skipped" and "no judges configured" in none["reason"]
    empty = analyse_error_taxonomy(sample.iloc[0:0], judgements.iloc[0:0], order, TAXONOMY, _inputs(), config)
    assert empty.results["status"] == "skipped" and "no English/target pair" in empty.results["reason"]
    judgements.loc[3, "label"] = "mostly_right"
    with pytest.raises(ValueError, match=r"error_judgements.*record 3.*'label'"):
        analyse_error_taxonomy(sample, judgements, order, TAXONOMY, _inputs(), config)


def test_inputs_from_the_demo_config(config: ProjectConfig) -> None:
    inputs = inputs_from_config(config)
    assert inputs.judges == ("offline-judge-a", "offline-judge-b")
    assert inputs.min_articles == config.study.min_articles and inputs.seed == 42
    # The demo's rule judges share no family with the evaluated lexical reader.
    assert inputs.families["offline-judge-a"] == "rule" != inputs.families["lexical-reader"] == "lexical"
    spec = config.models.get("lexical-reader").model_copy(update={"model": "meta-llama/Llama-3.1-8B"})
    assert model_family(spec) == "llama" and model_family(spec, {"lexical-reader": "meta"}) == "meta"


def _materialize(config_dir: Path, data: Path) -> dg.ExecuteInJobResult:
    from clcg_pipeline.resources import StudyResource
    from clcg_pipeline.storage._io_manager import ParquetIOManager

    cfg = load_config(config_dir)
    (asset,) = build_error_taxonomy_analysis_defs(cfg).assets or []
    return materialize(
        [asset],
        resources={
            "study": StudyResource(config_dir=str(config_dir), data_dir=str(data)),
            "io_manager": ParquetIOManager(base_path=str(data)),
        },
        raise_on_error=True,
    )


def test_asset_writes_results_and_warns_when_skipped(demo_config_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = _materialize(demo_config_dir, data)
    (check,) = result.get_asset_check_evaluations()
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    doc = json.loads((data / "error_taxonomy_results.json").read_text())
    assert doc["status"] == "skipped" and "no English/target pair" in doc["reason"]

    sample, judgements, _ = crafted()
    judgements["judge"] = judgements["judge"].map({"ja": "offline-judge-a", "jb": "offline-judge-b"})
    for table, frame in (("diagnostic_sample", sample), ("error_judgements", judgements)):
        (data / table).mkdir(parents=True)
        frame.to_parquet(data / table / "data.parquet", index=False)
    result = _materialize(demo_config_dir, data)
    (check,) = result.get_asset_check_evaluations()
    assert check.passed
    doc = json.loads((data / "error_taxonomy_results.json").read_text())
    assert doc["status"] == "ok" and doc["taxonomy"] == "clcg-error-v1" and doc["pairs"] == 20
    fine = next(a for a in doc["agreement"] if a["level"] == "fine")
    assert fine["kappa"] == pytest.approx(4 / 7)
    # The demo's rule judges share no family with any evaluated model.
    assert all(not s["identifiable"] for s in doc["self_preference"])
    stored = pd.read_parquet(next((data / "error_taxonomy_estimates").rglob("*.parquet")))
    assert set(stored.columns) >= {"estimand", "judge", "group", "estimate", "ci_low", "n_articles", "status"}
    assert len(stored) > 0 and stored["estimand"].str.contains("crosslingual_loss").any()
