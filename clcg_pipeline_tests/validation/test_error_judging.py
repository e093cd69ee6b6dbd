"""The taxonomy file, judging both sides of each pair, order bias, and the Dagster assets."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
import yaml

from clcg_pipeline.calls import CallOptions
from clcg_pipeline.calls.fake_server import FakeServer, reply_marker
from clcg_pipeline.config import load_config
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import ParquetIOManager, read_all_partitions
from clcg_pipeline.storage._files import DATA_FILE, partition_dir, write_frame
from clcg_pipeline.validation.taxonomy._judging import (
    ORDER_BIAS_COLUMNS,
    error_template,
    judge_sample,
    order_bias_pairs,
    side_subjects,
)
from clcg_pipeline.validation.taxonomy._label_set import TAXONOMY_DIR, load_taxonomy, parse_taxonomy
from clcg_pipeline.validation.taxonomy.assets import build_error_judging_defs
from clcg_pipeline_tests.calls.conftest import FAKE_KEY_ENV, FAST, spec_for
from clcg_pipeline_tests.conftest import materialize

# ---------------------------------------------------------------------------- taxonomy file


def test_shipped_taxonomy_is_complete_and_consistent() -> None:
    taxonomy = load_taxonomy("clcg-error-v1")
    study_named = {"correct", "partial_or_omission", "unsupported_addition", "contradiction"}
    assert study_named | {"format_or_parse_failure"} <= set(taxonomy.labels)
    assert len(taxonomy.labels) == 9 and all(len(d) > 20 for d in taxonomy.definitions.values())
    assert len(taxonomy.collapsed_labels) == 7 and set(taxonomy.collapsed) == set(taxonomy.labels)
    # The study's five executed semantic-error labels; form and compliance failures are not among them.
    assert len(taxonomy.semantic_errors) == 5 and "correct" not in taxonomy.semantic_errors
    assert {"partial_or_omission", "unsupported_addition", "contradiction"} <= taxonomy.semantic_errors
    assert not {"format_or_parse_failure", "wrong_language", "refusal"} & taxonomy.semantic_errors
    assert taxonomy.collapse("correct") == "correct" and taxonomy.is_semantic_error(None) is None
    # Every shipped file loads (a new version is a new file, validated the same way).
    for path in TAXONOMY_DIR.glob("*.yaml"):
        assert parse_taxonomy(path).id == path.stem


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["labels"].pop(), "need 9 distinct labels"),
        (
            lambda d: d["collapsed"].pop("refusal"),
            r"collapsed: must map exactly the labels; missing \['refusal'\]",
        ),
        (lambda d: d["collapsed"].update(refusal="refusal"), "need 7 classes"),
        (lambda d: d["semantic_errors"].append("typo_label"), r"unknown \['typo_label'\]"),
        (lambda d: d["labels"][1].update(definition="short"), "labels.1.definition"),
        (lambda d: d.update(extra_key=1), "extra_key"),
    ],
)
def test_broken_taxonomy_file_is_one_clear_error(
    tmp_path: Path, change: Callable[[dict], None], message: str
) -> None:
    document = yaml.safe_load((TAXONOMY_DIR / "clcg-error-v1.yaml").read_text(encoding="utf-8"))
    change(document)
    path = tmp_path / "clcg-error-v1.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    with pytest.raises(ValueError, match=message) as raised:
        parse_taxonomy(path)
    assert str(path) in str(raised.value)


def test_unknown_taxonomy_names_the_shipped_ones() -> None:
    with pytest.raises(ValueError, match=r"'clcg-error-v9'.*shipped: \['clcg-error-v1'\]"):
        load_taxonomy("clcg-error-v9")


def test_template_quotes_the_definitions() -> None:
    template = error_template()
    for label, definition in load_taxonomy().definitions.items():
        assert f"- {label}: {definition}" in template.system
    assert template.version == "error-judge-v1" and template.fields == (
        "passage",
        "question",
        "gold_answer",
        "response",
    )


# ---------------------------------------------------------------------------- judging

PASSAGES = {
    "en": "The bridge was built in 1932 by the harbour board. Fishermen opposed it.",
    "sw": "Daraja lilijengwa mwaka 1932 na bodi ya bandari. Wavuvi walipinga.",
}


def _sample(n_docs: int = 3) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rows = []
    for d in range(n_docs):
        rows.append(
            {
                "pair_id": f"p{d}",
                "model": "secret-model-x",
                "doc_id": f"d{d}",
                "item_id": f"d{d}-i0",
                "rep": 0,
                "context_scope": "full_body",
                "language": "sw",
                "level": "L3",
                "item_source": "llm",
                "en_score": 0.9,
                "target_score": 0.1,
                "score_delta": 0.8,
                "candidate_loss": True,
                "metric": "token_f1",
                "en_answer": "It was built in 1932 by the harbour board.",
                "target_answer": ["Not stated", "", "Daraja lilijengwa mwaka huo kwenye bandari"][d % 3],
            }
        )
    paragraphs = pd.DataFrame(
        [
            {"doc_id": f"d{d}", "language": lang, "pid": "p1", "ordinal": 0, "text": text}
            for d in range(n_docs)
            for lang, text in PASSAGES.items()
        ]
    )
    items = pd.DataFrame(
        [
            {
                "item_id": f"d{d}-i0",
                "question": "When and by whom was the bridge built?",
                "gold_answer": "in 1932 by the harbour board",
            }
            for d in range(n_docs)
        ]
    )
    return pd.DataFrame(rows), paragraphs, items


def test_subjects_are_blinded_and_take_the_side_language_passage() -> None:
    sample, paragraphs, items = _sample()
    from clcg_pipeline.validation.taxonomy._judging import passages_by_doc

    subjects = side_subjects(sample, passages_by_doc(paragraphs), items, reference="en")
    assert len(subjects) == 2 * len(sample)
    en_keys, en_fields = subjects[0]
    tg_keys, tg_fields = subjects[1]
    assert (en_keys["side"], en_keys["language"], tg_keys["side"], tg_keys["language"]) == (
        "en",
        "en",
        "target",
        "sw",
    )
    assert en_fields["passage"] == PASSAGES["en"] and tg_fields["passage"] == PASSAGES["sw"]
    assert set(en_fields) == {"passage", "question", "gold_answer", "response"}
    rendered = json.dumps([f for _, f in subjects])
    assert "secret-model-x" not in rendered and "L3" not in rendered
    missing = items.iloc[1:]
    with pytest.raises(ValueError, match=r"pair 'p0' field item_id 'd0-i0' is not in items"):
        side_subjects(sample, passages_by_doc(paragraphs), missing, reference="en")


def test_offline_judges_label_every_side_and_both_orders(tmp_path: Path) -> None:
    config = load_config(Path(__file__).resolve().parents[2] / "assets_config")
    judges = [config.models.get("offline-judge-a"), config.models.get("offline-judge-b")]
    sample, paragraphs, items = _sample()
    result = judge_sample(
        sample,
        paragraphs=paragraphs,
        items=items,
        judges=judges,
        reference="en",
        taxonomy_id="clcg-error-v1",
        order_bias_n=2,
        seed=42,
        options=CallOptions(cache_dir=str(tmp_path)),
    )
    ej = result.error_judgements
    assert len(ej) == 2 * 2 * len(sample) and set(ej["status"]) == {"ok"}
    labels = ej.set_index(["judge", "pair_id", "side"])["label"]
    assert labels[("offline-judge-a", "p0", "en")] == "correct"
    assert labels[("offline-judge-a", "p0", "target")] == "unwarranted_not_stated"
    assert labels[("offline-judge-a", "p1", "target")] == "format_or_parse_failure"
    assert labels[("offline-judge-a", "p2", "target")] == "wrong_language"
    taxonomy = load_taxonomy()
    assert (ej["collapsed_label"] == ej["label"].map(taxonomy.collapsed)).all()
    assert (ej["semantic_error"] == ej["label"].isin(taxonomy.semantic_errors)).all()
    assert set(ej.loc[ej["side"] == "target", "language"]) == {"sw"} and set(ej["pair_language"]) == {"sw"}
    ob = result.order_bias_judgements
    assert list(ob.columns) == list(ORDER_BIAS_COLUMNS)
    assert len(ob) == 2 * 2 * 2 and set(ob["order"]) == {"en_first", "target_first"}
    # The better (English) answer wins both ways round; A/B is mapped back to the side.
    assert set(ob["preferred"]) == {"en"} and set(ob["choice"]) == {"A", "B"}
    assert set(result.judge_calls["judge"]) == {"offline-judge-a", "offline-judge-b"}
    assert (
        order_bias_pairs(sample, 2, 42)["pair_id"].tolist()
        == order_bias_pairs(sample, 2, 42)["pair_id"].tolist()
    )


def test_hosted_judge_through_the_fake_server_records_bad_replies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scripted replies ride in the response text: a good label, a fabricated quote, a refusal."""
    monkeypatch.setenv(FAKE_KEY_ENV, "fake-key-for-judging")
    sample, paragraphs, items = _sample()
    good = json.dumps({"label": "correct", "evidence": "built in 1932", "rationale": "matches the gold"})
    fabricated = json.dumps({"label": "contradiction", "evidence": "built in 1845", "rationale": "x"})
    sample["en_answer"] = f"It was built in 1932. {reply_marker(good)}"
    sample["target_answer"] = [
        reply_marker(fabricated),
        "[[answer:refusal]]",
        reply_marker(good.replace('"correct"', '"great"')),
    ]
    with FakeServer() as server:
        spec = spec_for("openai", server.url, id="hosted-judge")
        result = judge_sample(
            sample,
            paragraphs=paragraphs,
            items=items,
            judges=[spec],
            reference="en",
            taxonomy_id="clcg-error-v1",
            order_bias_n=0,
            seed=42,
            options=CallOptions(cache_dir=str(tmp_path), policy=FAST),
        )
        sent = json.dumps(list(server.state.bodies.values()))
    status = result.error_judgements.set_index(["pair_id", "side"])["status"]
    assert set(status.xs("en", level="side")) == {"ok"}
    assert status[("p0", "target")] == "unparseable"
    assert status[("p1", "target")] == "refused"
    assert status[("p2", "target")] == "unparseable"
    bad = result.error_judgements.set_index(["pair_id", "side"]).loc[("p0", "target")]
    assert bad["label"] is None and "occurs in none" in bad["error"]
    assert result.summary["unparseable_share"] == pytest.approx(2 / 6)
    assert "secret-model-x" not in sent and '"sw"' not in sent
    assert result.order_bias_judgements.empty


# ---------------------------------------------------------------------------- assets


def _resources(config_dir: Path, data: Path) -> dict[str, object]:
    return {
        "study": StudyResource(config_dir=str(config_dir), data_dir=str(data)),
        "io_manager": ParquetIOManager(base_path=str(data)),
    }


def _store(data: Path, sample_n_docs: int = 3) -> None:
    sample, paragraphs, items = _sample(sample_n_docs)
    preds, scores = [], []
    for row in sample.to_dict("records"):
        for lang, answer, score in (("en", row["en_answer"], 0.9), ("sw", row["target_answer"], 0.1)):
            key = {k: row[k] for k in ("model", "doc_id", "item_id", "rep", "context_scope")}
            key.update(model="lexical-reader", language=lang)
            preds.append({**key, "answer": answer, "status": "ok", "call_id": "c"})
            scores.append({**key, "level": "L3", "item_source": "llm", "token_f1": score})
    for lang in ("en", "sw"):
        dims = {"language": lang, "model": "lexical-reader"}
        for table, rows in (("predictions", preds), ("scores", scores)):
            frame = pd.DataFrame([r for r in rows if r["language"] == lang])
            write_frame(partition_dir(data, table, dims) / DATA_FILE, frame)
        write_frame(
            partition_dir(data, "paragraphs", {"language": lang}) / DATA_FILE,
            paragraphs[paragraphs["language"] == lang],
        )
    write_frame(partition_dir(data, "items", None) / DATA_FILE, items)


def _materialize(config_dir: Path, data: Path) -> dg.ExecuteInProcessResult:
    defs = build_error_judging_defs(load_config(config_dir))
    assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)]
    with dg.DagsterInstance.ephemeral() as instance:
        return materialize(assets, resources=_resources(config_dir, data), instance=instance)


def test_assets_judge_the_stored_responses(tmp_path: Path, config_dir: Path) -> None:
    data = tmp_path / "data"
    _store(data)
    result = _materialize(config_dir, data)
    assert result.success
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    # Three pairs of the 2,000 sought: the sample check warns, the judgements check passes.
    assert not checks["diagnostic_sample_complete"].passed
    assert checks["diagnostic_sample_complete"].severity == dg.AssetCheckSeverity.WARN
    assert checks["judgements_usable"].passed, checks["judgements_usable"].description
    sample = read_all_partitions(data, "diagnostic_sample")
    judgements = read_all_partitions(data, "error_judgements")
    calls = read_all_partitions(data, "judge_calls")
    assert len(sample) == 3 and len(judgements) == 3 * 2 * 2
    assert len(read_all_partitions(data, "order_bias_judgements")) == 3 * 2 * 2
    assert set(calls["judge"]) == {"offline-judge-a", "offline-judge-b"} and set(calls["outcome"]) == {"ok"}
    # A second run answers every judge call from the cache, and the first run's payments stay
    # on record (storage/_paid.py): the table is the same but for nothing paid anew.
    second = _materialize(config_dir, data)
    assert second.success
    again = read_all_partitions(data, "judge_calls")
    assert second.run_id not in set(again["paid_run"].dropna())
    key = ["call_id", "judge"]
    paid = ["cached", "cost_usd", "paid_run", "paid_at"]
    assert (
        again.sort_values(key)[paid]
        .reset_index(drop=True)
        .equals(calls.sort_values(key)[paid].reset_index(drop=True))
    )


def test_assets_without_judges_are_skipped_and_warn(
    tmp_path: Path, config_dir: Path, edit_yaml: Callable
) -> None:
    edit_yaml(config_dir / "study.yaml", lambda d: d["error_taxonomy"].update(judges=[]))
    data = tmp_path / "data"
    _store(data)
    result = _materialize(config_dir, data)
    assert result.success
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    for name in ("diagnostic_sample_complete", "judgements_usable"):
        assert not checks[name].passed and checks[name].severity == dg.AssetCheckSeverity.WARN
        assert "study.error_taxonomy.judges is empty" in (checks[name].description or "")
    assert read_all_partitions(data, "error_judgements").empty


def test_judgements_check_warns_on_a_high_unparseable_share() -> None:
    from clcg_pipeline.validation.taxonomy.assets import judgements_check

    summary = {
        "sides": 6,
        "judges": ["j"],
        "unparseable_share": 2 / 6,
        "statuses": {"ok": 4, "unparseable": 2},
    }
    high = judgements_check(summary, 0.1)
    assert not high.passed and high.severity == dg.AssetCheckSeverity.WARN
    assert "33.3% of judgements unparseable" in (high.description or "")
    fine = judgements_check(summary, 0.5)
    assert fine.passed and "2 judgement(s) not ok" in (fine.description or "")


def test_one_run_budget_covers_every_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAKE_KEY_ENV, "fake-key-for-judging")
    sample, paragraphs, items = _sample(6)
    good = json.dumps({"label": "correct", "evidence": "1932", "rationale": "r"})
    sample["en_answer"] = [f"Built in 1932 ({i}). {reply_marker(good)}" for i in range(len(sample))]
    sample["target_answer"] = [f"1932 ({i}). {reply_marker(good)}" for i in range(len(sample))]
    with FakeServer() as server:
        judges = [spec_for("openai", server.url, id=f"hosted-{k}", model=f"judge-{k}") for k in "ab"]
        budget = 0.006  # a worst-case judge call costs about $0.0022 here: room for two
        result = judge_sample(
            sample,
            paragraphs=paragraphs,
            items=items,
            judges=judges,
            reference="en",
            taxonomy_id="clcg-error-v1",
            order_bias_n=2,
            seed=42,
            options=CallOptions(cache_dir=str(tmp_path), budget_usd=budget, policy=FAST),
        )
    calls = result.judge_calls
    assert 0 < calls["cost_usd"].sum() <= budget
    assert set(result.error_judgements["status"]) == {"ok", "missing"}
    # The second judge starts with what the first left, not with a fresh budget.
    ok = result.error_judgements[result.error_judgements["status"] == "ok"]["judge"].value_counts()
    assert ok.get("hosted-b", 0) < ok["hosted-a"]
