"""The offline reader's SIMULATED per-language gap on the demo corpus (calls/_lexical.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from clcg_pipeline.calls._lexical import simulated_drop
from clcg_pipeline.calls._providers.offline import OfflineAPI
from clcg_pipeline.config import ConditionSettings, ModelSpec, load_config
from clcg_pipeline.inference import Question, render_request
from clcg_pipeline_tests.conftest import DEFAULT_CONFIG

# demo-007 of the bundled corpus: its Portuguese paragraphs and questions its English answers.
PT = [
    (
        "p01",
        "A biblioteca pública de Brackwell abriu uma prateleira de empréstimo de sementes "
        "a 4 de maio de 2020.",
    ),
    ("p02", "A ideia partiu da bibliotecária Mara Osk, que tem uma horta atrás da biblioteca."),
]
QS = [
    Question("q1", "What did the librarian keep behind the library?"),
    Question("q2", "When did the public library in Brackwell open a seed-lending shelf?"),
]
SPEC = ModelSpec(id="lex", provider="offline", model="lexical-overlap-v1", options={"threshold": 0.2})


def _answers(
    options: dict[str, float | int | str | bool], language: str = "pt", doc_id: str = "demo-007"
) -> list[str]:
    req = render_request(
        "full_body",
        questions=QS,
        paragraphs=PT,
        settings=ConditionSettings(temperature=0.2, seed=42),
        rep=0,
        metadata={"doc_id": doc_id, "language": language, "context_scope": "full_body"},
    )
    spec = SPEC.model_copy(update={"options": {"threshold": 0.2, **options}})
    out = asyncio.run(OfflineAPI(spec, None).generate(req, timeout_s=1))
    return list(json.loads(out.text or ""))


def test_without_the_option_a_target_passage_gets_the_plain_reader() -> None:
    assert _answers({}) == ["Not stated", "Not stated"]


def test_rate_zero_reads_the_english_original_and_rate_one_the_passage() -> None:
    understood = _answers({"simulated_drop_pt": 0.0})
    assert "garden behind the library" in understood[0]
    assert "4 May 2020" in understood[1]
    assert _answers({"simulated_drop_pt": 1.0}) == ["Not stated", "Not stated"]


def test_a_non_demo_article_gets_the_plain_reader() -> None:
    assert _answers({"simulated_drop_pt": 0.0}, doc_id="not-a-demo-article") == ["Not stated", "Not stated"]


def test_drops_are_deterministic_and_differ_by_language() -> None:
    questions = [f"question {i}" for i in range(2000)]
    shares = {}
    for language, rate in (("pt", 0.1), ("ht", 0.75)):
        drops = [simulated_drop(language, q, rate) for q in questions]
        assert drops == [simulated_drop(language, q, rate) for q in questions]
        shares[language] = sum(drops) / len(drops)
    assert abs(shares["pt"] - 0.1) < 0.03 and abs(shares["ht"] - 0.75) < 0.03


@pytest.mark.parametrize("bad", [1.5, -0.1, "x", True])
def test_bad_rate_is_refused_naming_model_and_option(bad: object) -> None:
    spec = SPEC.model_copy(update={"options": {"simulated_drop_ka": bad}})
    with pytest.raises(ValueError, match=r"model 'lex', options.simulated_drop_ka"):
        OfflineAPI(spec, None)


def test_demo_config_simulates_a_gap_that_grows_as_the_joshi_class_falls() -> None:
    config = load_config(DEFAULT_CONFIG)
    reader = next(m for m in config.models.models if m.id == "lexical-reader")
    classes = {lang.iso: lang.joshi_class for lang in config.languages.languages}
    rates = {
        k.removeprefix("simulated_drop_"): v
        for k, v in reader.options.items()
        if k.startswith("simulated_drop_")
    }
    assert set(rates) == {"pt", "ka", "is", "mt", "sw", "ht"}
    by_class = sorted(rates, key=lambda iso: (-classes[iso], rates[iso]))
    assert [rates[iso] for iso in by_class] == sorted(rates.values())
