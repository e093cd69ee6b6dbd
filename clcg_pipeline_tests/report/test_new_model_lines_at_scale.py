"""Issue 37: the terminal's new-model lines stay bounded at hundreds of models and name the query
with every difference; a small study still lists each one."""

from __future__ import annotations

import re
import shlex
from itertools import combinations
from pathlib import Path
from typing import Any

from clcg_pipeline.report import new_model_lines
from clcg_pipeline.report._new_model_section import ALL_SHOWN_UP_TO, SIGNIFICANT_SHOWN
from clcg_pipeline.results import new_model_block, split_model_pairs, write_model_pairs
from clcg_pipeline.storage import build_catalog, default_catalog_path, query

NEW = 250  # the new model's position in the ranking (0-based): rank 251


def _ids(n: int) -> list[str]:
    return [f"s{k:03d}" for k in range(n)]


def _gap(k: int, j: int) -> dict[str, Any]:
    """Model k minus model j: gaps rise 0.001 per rank; separated beyond 20 ranks apart; the pairs
    of models 7 apart withheld (no p), as a study with too few articles for them leaves them."""
    estimate = 0.001 * (k - j)
    # Every field of the model_pairs table's contract, so the pairs can be written to it.
    counts = {"n": 100, "n_articles": 30, "valid_replicates": 200, "p_bound": False, "flags": []}
    if abs(k - j) == 7:
        return {"estimate": estimate, "identifiable": False, "reason": "too few articles", **counts}
    p_adj = 0.001 if abs(k - j) > 20 else 0.4
    interval = {"ci_low": estimate - 0.01, "ci_high": estimate + 0.01}
    return {"estimate": estimate, **interval, "p": p_adj / 2, "p_adj": p_adj, **counts}


def _pair(models: list[str], k: int, j: int) -> dict[str, Any]:
    block = _gap(k, j)
    return {"model_a": models[k], "model_b": models[j], "n_common_items": 100, **{g: block for g in GAPS}}


GAPS = ("h1_micro", "macro", "macro_net")


def study(n: int, new: int, *, every_pair: bool = False) -> dict[str, Any]:
    """A document of ``n`` models ranked in id order whose model ``new`` is the new model: its
    pairs (every pair with ``every_pair``), ranks, tie groups of ten, and its ``new_model`` block
    as the analysis builds it (``new_model_block``); the pairs then split off to their table."""
    models = _ids(n)
    pairs = {}
    for k, j in combinations(range(n), 2):
        if every_pair or new in (k, j):
            a, b = (k, j) if (k + j) % 2 else (j, k)  # the new model first in some, second in others
            pairs[f"{models[a]} vs {models[b]}"] = _pair(models, a, b)
    groups = [models[start : start + 10] for start in range(0, n, 10)]
    document: dict[str, Any] = {
        "h1": {"by_model": {m: {"h1_micro": {"estimate": 0.1 + 0.001 * k}} for k, m in enumerate(models)}},
        "model_contrasts": {
            "models": models,
            "pairs": pairs,
            "ranks": {
                m: {"h1_micro": {"estimate": float(k + 1), "ci_low": float(k), "ci_high": float(k + 2)}}
                for k, m in enumerate(models)
            },
            "tie_groups": {
                "gap": "h1_micro",
                "level": 0.05,
                "rule": "adjacent pairs not separated",
                "reason": None,
                "groups": groups,
                "by_model": {m: k // 10 + 1 for k, m in enumerate(models)},
            },
        },
    }
    document["new_model"] = new_model_block(document, models[new])
    return document


def test_at_500_models_the_lines_are_bounded_and_name_the_query() -> None:
    document = study(500, NEW)
    split_model_pairs(document)  # as the analysis writes it: the pairs_table named
    lines = new_model_lines(document)
    # The old code printed one line per other model: 500 lines.
    assert len(lines) <= 1 + 1 + 2 + SIGNIFICANT_SHOWN + 1
    assert lines[0].startswith(
        "new model s250: H1 micro CLCG 0.3500; rank 251 of 500 (interval 250\u2013252)"
    )
    assert "tie group 26 of 50 (10 models) (1 = smallest gap)" in lines[0]
    # 0-based 250 against 0..499: 230 more than 20 ranks above and 229 below are significant;
    # 7 apart (s243, s257) have no test; the remaining 38 within 20 ranks are not separated.
    assert lines[1] == (
        "  against the other 499 models (H1 micro; p (adj.) < 0.05, Benjamini-Hochberg across all "
        "pairs): significantly better (smaller gap) than 229, worse than 230, not separated from 38; "
        "2 without a test"
    )
    shown = [line for line in lines if line.startswith("  s250 minus ")]
    # Its two neighbours in the ranking, and the significant ones closest in rank, in rank order.
    others = [re.findall(r"minus (s\d+) \(rank (\d+)\)", line)[0] for line in shown]
    assert [int(rank) for _, rank in others] == sorted(int(rank) for _, rank in others)
    assert [o for o, _ in others] == [f"s{k}" for k in (*range(225, 230), 249, 251, *range(271, 276))]
    assert any("minus s251 (rank 252): -0.0010" in line for line in shown)
    assert len([line for line in shown if "p (adj.) 0.001" in line]) == SIGNIFICANT_SHOWN
    assert lines[-1].startswith(
        f"  ... and {499 - len(shown)} more; every pair is in the catalog view model_pairs "
        '(clcg query --named model_pairs); all 499, model_a minus model_b: clcg query "SELECT '
    )
    assert "'s250' IN (model_a, model_b)" in lines[-1]


def test_a_document_written_before_the_pairs_table_names_the_estimates_query() -> None:
    lines = new_model_lines(study(60, 30))
    assert len(lines) <= 1 + 1 + 2 + SIGNIFICANT_SHOWN + 1
    assert lines[-1].endswith("more; all 59: clcg query --named model_contrasts")


def test_the_named_command_lists_every_difference_from_the_catalog(tmp_path: Path) -> None:
    """The command on the last line, run as printed, lists the new model's every pair."""
    n = ALL_SHOWN_UP_TO + 5
    document = study(n, 7, every_pair=True)
    write_model_pairs(split_model_pairs(document), str(tmp_path))
    build_catalog(str(tmp_path))
    # The command is the line's last part, to copy as it is.
    command = shlex.split(new_model_lines(document)[-1].split("model_a minus model_b: ", 1)[1])
    assert command[:2] == ["clcg", "query"]
    listed = query(default_catalog_path(str(tmp_path)), command[2], data_dir=str(tmp_path))
    assert len(listed) == n - 1 and set(listed.model_a) | set(listed.model_b) == set(_ids(n))


def test_a_study_of_up_to_ten_other_models_lists_every_difference_as_before() -> None:
    document = study(ALL_SHOWN_UP_TO + 1, 4)
    lines = new_model_lines(document)
    assert len(lines) == 1 + ALL_SHOWN_UP_TO
    assert lines[1:] == [
        f"  s004 minus {d['other']}: "
        + (
            f"{d['estimate']:.4f} [{d['ci_low']:.4f}, {d['ci_high']:.4f}], p (adj.) {d['p_adj']:.3f}"
            if "p_adj" in d
            else f"{d['estimate']:.4f} (not identifiable: too few articles)"
        )
        for d in document["new_model"]["differences"]
    ]


def test_three_models_read_as_before() -> None:
    document = study(3, 1)
    del document["model_contrasts"]["tie_groups"]  # as the old document: the headline unchanged
    assert new_model_lines(document) == [
        "new model s001: H1 micro CLCG 0.1010; rank 2 of 3 (interval 1\u20133) (1 = smallest gap)",
        "  s001 minus s000: 0.0010 [-0.0090, 0.0110], p (adj.) 0.400",
        "  s001 minus s002: -0.0010 [-0.0110, 0.0090], p (adj.) 0.400",
    ]


def test_a_model_id_with_a_quote_or_a_dollar_is_quoted_for_sql_and_the_shell() -> None:
    document = study(ALL_SHOWN_UP_TO + 5, 7)
    split_model_pairs(document)
    document["new_model"]["model"] = "o'neil $1"
    command = shlex.split(new_model_lines(document)[-1].split("model_a minus model_b: ", 1)[1])
    assert command[:2] == ["clcg", "query"] and len(command) == 3
    assert "AND 'o''neil $1' IN (model_a, model_b)" in command[2]


def _command(line: str) -> list[str]:
    """The command ending the last line, split as a shell would (no shell run)."""
    return shlex.split(line.split("model_a minus model_b: ", 1)[1])


def test_a_data_option_goes_into_every_command_and_quoted_reads_that_folder() -> None:
    """``clcg run --data DIR`` printed commands that, typed as shown, queried ./clcg_data."""
    document = study(ALL_SHOWN_UP_TO + 5, 7)
    split_model_pairs(document)
    folder = "s3://bucket/my results"
    last = new_model_lines(document, data_option=f"--data {shlex.quote(folder)}")[-1]
    assert "(clcg query --data 's3://bucket/my results' --named model_pairs)" in last
    command = _command(last)
    assert command[:4] == ["clcg", "query", "--data", folder] and len(command) == 5
    assert command[4].startswith("SELECT model_a, model_b") and "'s007' IN (model_a, model_b)" in command[4]


def test_without_a_data_option_no_command_names_a_folder() -> None:
    document = study(ALL_SHOWN_UP_TO + 5, 7)
    split_model_pairs(document)
    assert "--data" not in "\n".join(new_model_lines(document))
    assert "--data" not in "\n".join(new_model_lines(study(60, 30)))
    old = new_model_lines(study(60, 30), data_option="--data elsewhere")[-1]
    assert old.endswith("more; all 59: clcg query --data elsewhere --named model_contrasts")
