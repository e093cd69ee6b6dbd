from __future__ import annotations

import dataclasses

from clcg_pipeline.calls import PROMPT_VERSIONS, bind, model_key, resolve_settings
from clcg_pipeline.config import ConditionSettings, ModelSpec
from clcg_pipeline.inference import Question, render_request

SETTINGS = ConditionSettings(temperature=0.2, seed=42)
PARAS = [("p1", "Der Fluss  fließt.\nNach Norden."), ("p2", "Zweiter Absatz.")]
QS = [
    Question("i1", "Where does the river flow?"),
    Question("i2", "Is the river long?", polar=True),
    Question("i3", "Which direction?", options=("north", "south")),
]
OFFLINE = ModelSpec(id="lex", provider="offline", model="lexical-overlap-v1", options={"threshold": 0.2})


def _full(**kw: object) -> object:
    args: dict[str, object] = {"questions": QS, "paragraphs": PARAS, "settings": SETTINGS, "rep": 0}
    args.update(kw)
    return render_request("full_body", **args)  # type: ignore[arg-type]


def test_full_body_renders_marked_paragraphs_numbered_questions_and_contract() -> None:
    req = _full()
    assert req.prompt_version == PROMPT_VERSIONS["full_body"] == "full_body-v1"
    system, user = req.messages[0]["content"], req.messages[1]["content"]
    assert "English" in system and "JSON array" in system and "Not stated" in system
    assert "¶p1 Der Fluss fließt. Nach Norden." in user  # whitespace normalised, one line
    assert user.index("¶p1") < user.index("¶p2") < user.index("Questions:")
    assert "1. Where does the river flow?" in user
    assert "2. Is the river long? (answer Yes, No or Not stated)" in user
    assert "   - north\n   - south" in user
    assert "exactly 3 strings" in user


def test_closed_book_has_no_passage_and_language_is_not_hashed() -> None:
    en = render_request("closed_book", questions=QS, settings=SETTINGS, rep=0, metadata={"language": "en"})
    ka = render_request("closed_book", questions=QS, settings=SETTINGS, rep=0, metadata={"language": "ka"})
    assert "¶" not in en.messages[1]["content"] and "Passage" not in en.messages[1]["content"]
    [b_en, b_ka] = bind(OFFLINE, [en, ka])
    assert b_en.call_id == b_ka.call_id


def test_call_id_is_stable_and_changes_only_with_what_changes_output() -> None:
    [base] = bind(OFFLINE, [_full()])
    # Pinned: a change of template wording or hashing must be deliberate (bump the version).
    assert base.request_hash == _full().request_hash
    assert len(base.call_id) == 64 and base.call_id != base.request_hash
    changed = [
        _full(rep=1),
        _full(settings=ConditionSettings(temperature=0.3, seed=42)),
        _full(settings=ConditionSettings(temperature=0.2, seed=43)),
        _full(paragraphs=PARAS[:1]),
        dataclasses.replace(_full(), prompt_version="full_body-v2"),
    ]
    ids = {r.call_id for r in bind(OFFLINE, changed)}
    assert base.call_id not in ids and len(ids) == len(changed)
    # Metadata, timeouts, attempts, concurrency and the key variable do not enter the key.
    same = bind(
        OFFLINE.model_copy(update={"timeout_s": 5, "max_attempts": 2, "concurrency": 99, "id": "other"}),
        [_full(metadata={"doc_id": "zzz"})],
    )[0]
    assert same.call_id == base.call_id
    other_model = bind(OFFLINE.model_copy(update={"options": {"threshold": 0.5}}), [_full()])[0]
    assert other_model.call_id != base.call_id


def test_model_key_ignores_key_env_but_not_endpoint_of_compatible_servers() -> None:
    a = ModelSpec(id="a", provider="openai_compatible", model="m", base_url="http://h1/v1", api_key_env="K1")
    b = a.model_copy(update={"api_key_env": "K2"})
    c = a.model_copy(update={"base_url": "http://h2/v1"})
    assert model_key(a) == model_key(b) != model_key(c)


def test_item_grounded_renders_one_question() -> None:
    req = render_request("item_grounded", questions=QS[:1], paragraphs=PARAS[1:], settings=SETTINGS, rep=0)
    user = req.messages[1]["content"]
    assert req.prompt_version == "item_grounded-v1"
    assert "¶p2" in user and "¶p1" not in user and "exactly 1 string," in user


def test_resolve_settings_condition_overrides_model_defaults() -> None:
    model = OFFLINE.model_copy(update={"temperature": 0.7, "top_p": 0.9, "seed": 1, "max_output_tokens": 99})
    got = resolve_settings(model, ConditionSettings(temperature=0.0, seed=20260322))
    assert got == ConditionSettings(temperature=0.0, top_p=0.9, seed=20260322, max_output_tokens=99)


def test_bad_requests_raise_clear_errors() -> None:
    import pytest

    with pytest.raises(ValueError, match="no questions"):
        render_request("full_body", questions=[], paragraphs=PARAS, settings=SETTINGS, rep=0)
    with pytest.raises(ValueError, match="no passage"):
        render_request(
            "full_body", questions=QS, paragraphs=[], settings=SETTINGS, rep=0, metadata={"doc_id": "d9"}
        )
    with pytest.raises(ValueError, match="unknown context_scope"):
        render_request("open_book", questions=QS, settings=SETTINGS, rep=0)  # type: ignore[arg-type]
