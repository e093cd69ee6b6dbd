from __future__ import annotations

from pathlib import Path

import pandas as pd

from clcg_pipeline.config import SourceSpec, load_config
from clcg_pipeline.corpus import load_source
from clcg_pipeline.items import REJECTION_COLUMNS, RULES, rejection_summary, validate_items

PARAS = pd.DataFrame(
    {
        "doc_id": ["d1"] * 3,
        "language": ["en"] * 3,
        "pid": ["p1", "p2", "p3"],
        "ordinal": [1, 2, 3],
        "text": [
            "The ferry  leaves Kessa at seven every morning.",
            "It carries up to 40 cars and 300 people.",
            "A second ferry will start in June.",
        ],
    }
)


def item(item_id: str, level: str, question: str, answer: str | None, support=("p1",), **kw) -> dict:
    fmt = {"L0": "polar", "L1": "span"}.get(level, "free")
    return {
        "item_id": item_id,
        "doc_id": kw.pop("doc_id", "d1"),
        "item_source": "llm",
        "level": level,
        "question": question,
        "gold_answer": answer,
        "answer_format": kw.pop("answer_format", fmt),
        "target_pids": list(support),
        "supporting_pids": list(support),
        "gold_answerable": kw.pop("gold_answerable", True),
        **kw,
    }


CASES = [
    (item("ok-L0", "L0", "Does the ferry leave at seven?", "Yes"), None),
    (item("ok-L0-ns", "L0", "Is the ferry free?", "Not stated"), None),
    (
        item("ok-L1", "L1", "When does the ferry leave?", "leaves Kessa at seven"),
        None,
    ),  # whitespace-normalized
    (item("ok-L3", "L3", "Could 40 cars cross at once?", "Yes", support=("p2",)), None),
    (item("ok-L4", "L4", "When and how many?", "Seven; 40 cars", support=("p1", "p2")), None),
    (item("ok-L5", "L5", "What is the main point?", "The ferry service", support=()), None),
    (item("bad-parse", "L2", None, None, parse_error="unreadable reply"), "unparseable"),
    (item("bad-doc", "L2", "q?", "a", doc_id="d9"), "unknown_article"),
    (item("bad-missing", "L2", "  ", "a"), "missing_field"),
    (item("bad-level", "L7", "q?", "a"), "unknown_level"),
    (item("bad-format", "L1", "When?", "at seven", answer_format="free"), "answer_format"),
    (item("bad-polar", "L0", "Is it big?", "Maybe"), "polar_label"),
    (item("bad-ns", "L2", "Who owns it?", "Not stated."), "not_answerable"),
    (item("bad-pid", "L2", "How many cars?", "40", support=("p9",)), "unknown_pid"),
    (item("bad-span", "L1", "When?", "Leaves Kessa at seven"), "span_not_found"),  # case-sensitive
    (item("bad-span-elsewhere", "L1", "How many?", "40 cars", support=("p1",)), "span_not_found"),
    (item("bad-support", "L3", "Why?", "because", support=()), "missing_support"),
    (item("bad-l4", "L4", "Why?", "because", support=("p2", "p2")), "l4_two_pids"),
    (item("bad-dup", "L2", "what is the article about? ", "x"), None),
    (item("bad-dup2", "L2", "What is the article  about?", "y"), "duplicate"),
]


def test_each_rule_rejects_its_case():
    frame = pd.DataFrame([c for c, _ in CASES])
    valid, rejected = validate_items(frame, PARAS)
    assert list(rejected.columns) == REJECTION_COLUMNS
    got = dict(zip(rejected["item_id"], rejected["rule"], strict=True))
    expected = {c["item_id"]: rule for c, rule in CASES if rule is not None}
    assert got == expected
    assert set(valid["item_id"]) == {c["item_id"] for c, rule in CASES if rule is None}
    assert "parse_error" not in valid.columns
    assert set(rejected["rule"]) <= set(RULES)
    # bad-dup2 repeats bad-dup's question up to case and spacing: only the second is rejected.
    assert rejected.set_index("item_id").loc["bad-pid", "detail"].startswith("pid(s) ['p9']")


def test_quota_and_summary():
    rows = [item(f"d1-L2-{i}", "L2", f"Question {i}?", "a") for i in range(1, 7)]
    valid, rejected = validate_items(pd.DataFrame(rows), PARAS, items_per_level=4)
    assert valid["item_id"].tolist() == [f"d1-L2-{i}" for i in range(1, 5)]  # the first four, no padding
    assert rejected["rule"].tolist() == ["over_quota", "over_quota"]
    summary = rejection_summary(rejected).set_index("rule")
    assert summary.loc["over_quota", "L2"] == 2 and summary.loc["over_quota", "L0"] == 0
    assert summary.loc["over_quota", "total"] == 2


def test_reference_filter_uses_english_text_only():
    other = PARAS.assign(language="pt", text="A balsa parte às sete.")
    both = pd.concat([PARAS, other])
    frame = pd.DataFrame([item("x", "L1", "When?", "leaves Kessa at seven")])
    valid, _ = validate_items(frame, both, reference="en")
    assert len(valid) == 1
    valid, rejected = validate_items(frame, other)  # Portuguese text does not contain the span
    assert rejected["rule"].tolist() == ["span_not_found"]


def test_demo_bank_is_valid():
    cfg = load_config()
    t = load_source(SourceSpec(name="demo", kind="demo"), cfg.languages)
    llm = t.items[t.items["item_source"] == "llm"]
    valid, rejected = validate_items(llm, t.paragraphs, reference="en", items_per_level=4)
    assert rejected.empty, rejected.to_string()
    assert len(valid) == len(llm)


def test_empty_input():
    valid, rejected = validate_items(pd.DataFrame(columns=["item_id", "doc_id", "level"]), PARAS)
    assert valid.empty and rejected.empty
    assert list(rejection_summary(rejected).columns) == ["rule", "L0", "L1", "L2", "L3", "L4", "L5", "total"]


def test_whole_demo_bank_human_included_passes_in_one_call():
    cfg = load_config()
    t = load_source(SourceSpec(name="demo", kind="demo"), cfg.languages)
    en = t.paragraphs[t.paragraphs["language"] == "en"]
    valid, rejected = validate_items(t.items, en)
    assert rejected.empty, rejected.to_string()
    assert set(valid["item_source"]) == {"llm", "human"}
    assert not valid.loc[valid["item_id"] == "demo-003-h4", "gold_answerable"].iloc[0]


def test_benchmark_items_keep_their_level_but_are_checked():
    fixtures = Path(__file__).resolve().parents[1] / "corpus" / "fixtures"
    cfg = load_config()
    t = load_source(SourceSpec(name="bb", kind="belebele", path=str(fixtures / "belebele")), cfg.languages)
    valid, rejected = validate_items(t.items, t.paragraphs, reference="en")
    assert rejected.empty and len(valid) == 3 and set(valid["level"]) == {"MC"}
    broken = t.items.copy()
    broken.loc[0, "gold_answer"] = "not an option"
    broken = pd.concat([broken, broken.iloc[[1]]], ignore_index=True)  # a repeated item_id
    _, rejected = validate_items(broken, t.paragraphs, reference="en")
    assert rejected["rule"].tolist() == ["answer_format", "duplicate"]


def test_items_read_back_from_parquet_validate_the_same(tmp_path):
    from clcg_pipeline.storage import conform

    cfg = load_config()
    t = load_source(SourceSpec(name="demo", kind="demo"), cfg.languages)
    back = conform("items", t.items).to_pandas()  # list columns come back as numpy arrays
    assert not isinstance(back["supporting_pids"].iloc[0], list)
    valid, rejected = validate_items(back, t.paragraphs, reference="en")
    assert rejected.empty and len(valid) == len(t.items)
