"""The studies' documents merged into ``study_results.json``, the one document reports read.

Sits above ``analysis``, ``validation`` and ``granularity``: the human validation's class-level
correlation needs the class CLCGs of the estimates, so it is completed here. The model pairs,
which grow with the square of the models, are split off here into a table beside the document
(``split_model_pairs``).
"""

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any, cast

import pandas as pd

from clcg_pipeline.analysis.sections.model_contrasts import KEYS, pair_label
from clcg_pipeline.storage import (
    StudyResultsDocument,
    empty_frame,
    partition_dir,
    read_frame,
    write_frame,
)
from clcg_pipeline.validation import CLASS_CLCG_CAVEAT, class_clcg_spearman

#: study_results.json key -> the asset whose document is merged under it
STUDY_SECTIONS = {
    "error_taxonomy": "error_taxonomy_results",
    "human_validation": "human_validation_results",
    "granularity": "granularity_results",
}


def merge_study_sections(
    results: StudyResultsDocument, estimates: pd.DataFrame, sections: dict[str, Any]
) -> None:
    """Put each study's document under its key; a study that is not ``ok`` is listed in warnings.

    The human validation's class-level adequacy is set beside this run's class CLCG
    (``class_raw_primary``), which only exists once the estimates are computed.
    """
    for key, document in sections.items():
        # Keys come from STUDY_SECTIONS, each a field of the typed document.
        cast(dict[str, Any], results)[key] = document
        status = document.get("status")
        if status != "ok":
            results.setdefault("warnings", []).append(
                f"{key}: {status or 'no status'}: {document.get('reason') or 'no reason given'}"
            )
    classes = estimates[estimates["estimand"] == "class_raw_primary"] if len(estimates) else estimates
    clcg = {
        str(group).removeprefix("class="): None if pd.isna(value) else float(value)
        for group, value in zip(classes.get("group", []), classes.get("estimate", []), strict=True)
    }
    human = sections.get("human_validation", {})
    classes = human.get("class_adequacy") or []
    if not classes:
        return
    for row in classes:
        row["clcg"] = clcg.get(str(row.get("joshi_class")))
    # The class-level rank correlation needs those CLCGs: computed here, where they exist.
    row, caveat = class_clcg_spearman(classes)
    human["spearman"] = [r for r in human.get("spearman", []) if r.get("metric") != "clcg_class"]
    if row is not None:
        human["spearman"].append(row)
    human["caveats"] = [c for c in human.get("caveats", []) if not c.startswith(CLASS_CLCG_CAVEAT)]
    if caveat is not None:
        human["caveats"].append(caveat)


# ---------------------------------------------------------------------------------------------
# The model pairs: every pair in a Parquet table beside the document, the few a reader needs in it
# (issue 37). The pairs grow with the square of the models (124,750 at 500 models): inline, they
# and their copies (the BH families' test lists, the flat estimand index) made the document
# hundreds of megabytes.

#: The table of every pair, ``<data>/model_pairs/data.parquet`` (the catalog's ``model_pairs`` view).
PAIRS_TABLE = "model_pairs"
PAIRS_PATH = f"{PAIRS_TABLE}/data.parquet"
PAIRS_QUERY = f"clcg query --named {PAIRS_TABLE}"
#: At most this many pairs kept for being significant alone (not adjacent);
#: at hundreds of models most pairs can be, and the document must stay readable.
SIGNIFICANT_KEPT = 50
#: The gaps of a pair (its keys in ``model_contrasts.pairs``).
PAIR_GAPS = tuple(KEYS)
#: The table of every estimand, ``<data>/estimates/data.parquet`` (the ``estimates`` asset).
ESTIMATES_TABLE = "estimates"
_INDEX_RULE = (
    "the flat estimands index keeps every estimand but those of one model or one pair of models "
    "(in the sections: h1.by_model, model_contrasts...); every row is in the estimates table"
)
#: BH's customary level, for a block whose tie groups do not record theirs.
_DEFAULT_LEVEL = 0.05
_PAIR_RULE = (
    "the pairs adjacent in the H1 micro ranking and those significant after Benjamini-Hochberg at "
    f"the tie groups' level on any gap (the {SIGNIFICANT_KEPT} closest in rank first); the new "
    "model's difference from every other model is in new_model.differences; every pair, one row "
    "per pair and gap, is in the table"
)


def rank_order(ranks: Mapping[str, Any]) -> list[str]:
    """Models by H1 micro rank, equal ranks by id (the leaderboard's order); unranked ones left out."""
    keyed = []
    for model, block in ranks.items():
        rank = block.get("h1_micro") if isinstance(block, Mapping) else None
        if isinstance(rank, Mapping) and rank.get("estimate") is not None:
            keyed.append((float(rank["estimate"]), str(model)))
    return [model for _, model in sorted(keyed)]


def _significant(pair: Mapping[str, Any], level: float) -> bool:
    """Significant after BH on any of the gaps (each gap is its own BH family)."""
    return any(
        isinstance(pair.get(gap), Mapping) and (p := pair[gap].get("p_adj")) is not None and p < level
        for gap in PAIR_GAPS
    )


def significant_pairs(block: Mapping[str, Any]) -> int:
    """How many pairs are significant after BH at the tie groups' level on any gap."""
    level = float((block.get("tie_groups") or {}).get("level") or _DEFAULT_LEVEL)
    pairs = (block.get("pairs") or {}).values()
    return sum(1 for pair in pairs if isinstance(pair, Mapping) and _significant(pair, level))


def kept_pairs(block: Mapping[str, Any]) -> list[str]:
    """The pairs a reader needs (``_PAIR_RULE``), in the block's order: those the document keeps
    and the report shows (the report applies it to a document that still holds every pair).

    The new model's pairs are not kept for being its own: ``new_model.differences`` already
    gives its difference from every other model (issue 37: at 500 models its 499 pairs, on
    every gap, were about a fifth of the document); those adjacent or significant are kept as
    any other's.
    """
    pairs = block.get("pairs") or {}
    order = rank_order(block.get("ranks") or {})
    position = {model: k for k, model in enumerate(order)}
    adjacent = {frozenset(p) for p in pairwise(order)}
    level = float((block.get("tie_groups") or {}).get("level") or _DEFAULT_LEVEL)
    kept, significant = set(), []
    for name, pair in pairs.items():
        if not isinstance(pair, Mapping):  # a hand-edited document: nothing to read
            continue
        models = (pair.get("model_a"), pair.get("model_b"))
        if frozenset(models) in adjacent:
            kept.add(name)
        elif _significant(pair, level):
            # The closest in rank first: a separation the ranking does not already make plain.
            distance = abs(position.get(str(models[0]), 0) - position.get(str(models[1]), 0))
            significant.append((distance, name))
    kept |= {name for _, name in sorted(significant)[:SIGNIFICANT_KEPT]}
    return [name for name in pairs if name in kept]


def pairs_frame(pairs: Mapping[str, Any], shown: Sequence[str]) -> pd.DataFrame:
    """Every pair, one row per pair and gap (the ``model_pairs`` contract); ``shown``: in the document.

    The same frame as ``pd.DataFrame`` of one dict per row (the pair's columns, its gap's fields,
    ``shown``), without those dicts (issue 37: seconds at 500 models): pandas reads the gaps'
    own dicts (a field a gap lacks is NaN, fields in the order they first appear) and the pair's
    columns are put before them, ``shown`` after the first gap's fields. A gap's fields are an
    estimate's (the closed ``Estimate`` shape): none is named as a pair's column.
    """
    # ``type(...) is dict`` first: the ABC's isinstance alone is a second at 374,250 rows.
    rows = [
        (name, pair, gap)
        for name, pair in pairs.items()
        if type(pair) is dict or isinstance(pair, Mapping)
        for gap in PAIR_GAPS
        if type(block := pair.get(gap)) is dict or isinstance(block, Mapping)
    ]
    if not rows:
        return empty_frame(PAIRS_TABLE)
    blocks = pd.DataFrame([pair[gap] for _, pair, gap in rows])
    in_document = set(shown)
    pair_columns = pd.DataFrame(
        {
            "pair": [name for name, _, _ in rows],
            "model_a": [pair.get("model_a") for _, pair, _ in rows],
            "model_b": [pair.get("model_b") for _, pair, _ in rows],
            "n_common_items": [pair.get("n_common_items") for _, pair, _ in rows],
            "gap": [gap for _, _, gap in rows],
        }
    )
    frame = pd.concat([pair_columns, blocks], axis=1)
    first = len(pair_columns.columns) + len(rows[0][1][rows[0][2]])
    frame.insert(first, "shown", [name in in_document for name, _, _ in rows])
    return frame


def split_model_pairs(results: StudyResultsDocument) -> pd.DataFrame:
    """Keep in ``results`` only the model pairs a reader needs, and return every pair as a table.

    In place: ``model_contrasts.pairs`` keeps ``kept_pairs``; each BH family's test list (every
    pair's ``p_adj`` is on the pair) becomes counts; ``model_contrasts.pairs_table`` names the
    table with all of them and its rows. A block without pairs (one model, no model) is left as
    it is, with an empty table.
    """
    block = cast(dict[str, Any], results.get("model_contrasts") or {})
    pairs = block.get("pairs")
    if not isinstance(pairs, dict) or not pairs:
        return empty_frame(PAIRS_TABLE)
    kept = kept_pairs(block)
    frame = pairs_frame(pairs, kept)
    significant = significant_pairs(block)
    block["pairs"] = {name: pairs[name] for name in kept}
    _count_family_tests(block.get("multiplicity") or {})
    block["pairs_table"] = {
        "table": PAIRS_TABLE,
        "path": PAIRS_PATH,
        "rows": len(frame),
        "pairs": len(pairs),
        "shown": len(kept),
        "significant": significant,
        "query": PAIRS_QUERY,
        "rule": _PAIR_RULE,
    }
    return frame


def _count_family_tests(families: Mapping[str, Any]) -> None:
    """Each BH family's lists of pairs as counts: every pair's ``p_adj`` is on the pair (and in
    the table); ``m`` and ``planned`` stay the whole family's."""
    for family in families.values():
        if not isinstance(family, dict) or not isinstance(family.get("tests"), list):
            continue
        family["rejected"] = sum(1 for row in family.pop("tests") if row.get("reject"))
        family["n_not_available"] = len(family.pop("not_available", None) or [])
        family["tests_in"] = PAIRS_TABLE


def index_without_models(results: StudyResultsDocument, estimates_rows: int) -> None:
    """The flat ``estimands`` index without the entries of one model or one pair of models.

    They grow with the models (eleven families per model, three per pair) and repeat what the
    sections hold (``h1.by_model``, ``model_contrasts.ranks`` and ``pairs``...); every row,
    theirs included, is in the estimates table beside the document, which ``estimands_table``
    names. In place; a document without a models list is left as it is.
    """
    block = results.get("model_contrasts") or {}
    models = [str(m) for m in block.get("models") or []]
    index = results.get("estimands")
    if not models or not isinstance(index, dict):
        return
    # Every pair's name, whichever way round (the pairs are gone from the block by now).
    groups = set(models) | {pair_label(a, b) for a in models for b in models if a != b}
    # An estimand's name holds no "/", so its group is all that follows the first one.
    dropped = [key for key in index if key.partition("/")[2] in groups]
    for key in dropped:
        del index[key]
    cast(dict[str, Any], results)["estimands_table"] = {
        "table": ESTIMATES_TABLE,
        "path": f"{ESTIMATES_TABLE}/data.parquet",
        "rows": estimates_rows,
        "indexed": len(index),
        "rule": _INDEX_RULE,
    }


def write_model_pairs(frame: pd.DataFrame, data_dir: str) -> str:
    """Write every pair to ``<data>/model_pairs/data.parquet`` (atomically, to its contract); its path."""
    path = partition_dir(data_dir, PAIRS_TABLE, None) / "data.parquet"
    write_frame(path, frame, contract=PAIRS_TABLE)
    return str(path)


def read_model_pairs(results: Mapping[str, Any], data_dir: str) -> pd.DataFrame:
    """Every model pair of a document: from its table beside it, or inline (a document written
    before the pairs moved out holds them all); a referenced table that is missing is an error."""
    block = results.get("model_contrasts") or {}
    reference = block.get("pairs_table")
    if not isinstance(reference, Mapping):
        pairs = block.get("pairs") or {}
        return pairs_frame(pairs, list(pairs))
    # The path is relative to the folder of study_results.json, the data folder.
    path = partition_dir(data_dir, PAIRS_TABLE, None).parent / str(reference.get("path") or PAIRS_PATH)
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: not found - study_results.json's model_contrasts.pairs_table names it "
            f"({reference.get('pairs')} pairs)"
        )
    return read_frame(path)
