"""Who rates what: task ids, quotas over strata, and each annotator's form of tasks."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.config import HumanValidationSettings


def task_id_of(prefix: str, *parts: Any) -> str:
    digest = hashlib.sha256("|".join(map(str, parts)).encode("utf-8")).hexdigest()[:12]
    return f"{prefix}-{digest}"


def allocate(total: int, weights: Sequence[float], caps: Sequence[int]) -> list[int]:
    """Split ``total`` by ``weights`` (largest remainder), capped, the rest moved to spare capacity.

    Hand-written: the textbook apportionment with caps is a dozen lines, no library offers it.
    """
    n = len(weights)
    out = [0] * n
    remaining = min(total, sum(caps))
    active = [i for i in range(n) if caps[i] > 0 and weights[i] > 0] or [i for i in range(n) if caps[i] > 0]
    while remaining > 0 and active:
        w = [weights[i] if any(weights[j] > 0 for j in active) else 1.0 for i in active]
        norm = sum(w) or 1.0
        raw = [remaining * x / norm for x in w]
        share = [math.floor(r) for r in raw]
        left = remaining - sum(share)
        for k in sorted(range(len(active)), key=lambda k: (-(raw[k] - share[k]), active[k]))[:left]:
            share[k] += 1
        for k, i in enumerate(active):
            take = min(share[k], caps[i] - out[i])
            out[i] += take
            remaining -= take
        active = [i for i in active if out[i] < caps[i]]
        if all(s == 0 for s in share):
            break
    return out


def assign_annotators(
    task_ids: Sequence[str],
    settings: HumanValidationSettings,
    rng: np.random.Generator,
    *,
    prefix: str = "ann",
) -> dict[str, list[str]]:
    """annotator id -> the task ids of their form (attention checks not yet planted).

    Load-balanced incomplete blocks: each task goes to the ``annotators_per_item`` annotators
    with the lightest load (ties broken by a seeded order), never twice to one annotator.
    """
    per = settings.annotators_per_item
    capacity = settings.items_per_form - settings.attention_checks
    if capacity < 1:
        raise ValueError(
            f"human_validation: items_per_form {settings.items_per_form} leaves no room beside "
            f"{settings.attention_checks} attention check(s)"
        )
    if not task_ids:
        return {}
    n_annotators = max(per, math.ceil(len(task_ids) * per / capacity))
    width = len(str(n_annotators))
    names = [f"{prefix}-{i + 1:0{width}d}" for i in range(n_annotators)]
    tie = rng.permutation(n_annotators)
    forms: dict[str, list[str]] = {n: [] for n in names}
    load = np.zeros(n_annotators, dtype=int)
    for task in [task_ids[i] for i in rng.permutation(len(task_ids))]:
        order = np.lexsort((tie, load))[:per]
        for k in order:
            forms[names[k]].append(task)
            load[k] += 1
    return forms


def forms_of(sample: pd.DataFrame) -> pd.DataFrame:
    """One row per assignment: annotator_id, position, task_id (an annotator's form in order)."""
    rows = [
        {"annotator_id": a, "position": int(p), "task_id": t}
        for t, anns, pos in zip(sample["task_id"], sample["annotators"], sample["positions"], strict=True)
        for a, p in zip(list(anns), list(pos), strict=True)
    ]
    frame = pd.DataFrame(rows, columns=["annotator_id", "position", "task_id"])
    return frame.sort_values(["annotator_id", "position"]).reset_index(drop=True)
