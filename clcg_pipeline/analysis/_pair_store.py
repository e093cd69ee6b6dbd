"""Model pairs kept from the last analysis: a new model computes only its own pairs (issue 37).

A pair's statistics depend on nothing but the two models' band rows and the settings of the
pair bootstrap (the articles, whose number and the seed fix the draws; the panel languages;
the replicates; the confidence; the BLAS that sums the replicates). Each model's rows are
summarized by a fingerprint, the settings by another; a pair whose two models and
fingerprints are those of a pair of the last analysis, under the same settings, takes that
pair's statistics, and only the others are computed. Every pair is a function of its two
models alone, bit for bit (see ``_pairwise._replicated``), so the result equals a full
recomputation.

Pure: the store is read and written at the edges (``_io.read_pair_store`` and
``write_pair_store``); anything unexpected in it means the pairs are all recomputed.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._pairwise import GAP_KEYS, AllPairs, PairBlock

#: Bumped whenever a pair's statistics are computed differently: an older store is not reused.
STORE_VERSION = 1
#: The statistics of one gap of a pair (``PairBlock``'s fields), stored as ``<gap>.<field>``.
FIELDS = ("estimate", "low", "high", "p", "valid", "n", "n_articles")
_INT_FIELDS = ("valid", "n", "n_articles")
#: What identifies a pair in the store: its models, in order, and their fingerprints.
ID_COLUMNS = ["model_a", "model_b", "print_a", "print_b"]
STAT_COLUMNS = ["common", *[f"{key}.{field}" for key in GAP_KEYS for field in FIELDS]]


def _is_int(column: str) -> bool:
    return column == "common" or column.rsplit(".", 1)[-1] in _INT_FIELDS


@dataclass(frozen=True)
class PairStore:
    """Every pair's statistics (``frame``: ``ID_COLUMNS`` then ``STAT_COLUMNS``) under ``settings``.

    ``computed`` and ``reused``: how many of the pairs this analysis computed and took from
    the previous store (both 0 for a store read from a file).
    """

    settings: str
    frame: pd.DataFrame
    computed: int = 0
    reused: int = 0

    def table(self) -> pd.DataFrame:
        """The frame to write: the settings fingerprint repeated on every row (one file, no sidecar)."""
        return self.frame.assign(settings=self.settings)


def store_from_table(frame: pd.DataFrame) -> PairStore:
    """A store from its written table; ``ValueError`` saying what is wrong with a damaged one."""
    missing = [c for c in [*ID_COLUMNS, *STAT_COLUMNS, "settings"] if c not in frame.columns]
    if missing:
        raise ValueError(f"missing column(s) {missing}")
    settings = frame["settings"].unique()
    if len(settings) > 1:
        raise ValueError(f"{len(settings)} different settings fingerprints")
    if frame.duplicated(ID_COLUMNS).any():
        raise ValueError("a pair stored more than once")
    out = pd.DataFrame({c: frame[c].astype(object).astype(str) for c in ID_COLUMNS})
    for column in STAT_COLUMNS:
        values = frame[column]
        if _is_int(column):
            if not pd.api.types.is_integer_dtype(values.dtype):
                raise ValueError(f"column {column!r} is {values.dtype}, not an integer")
            out[column] = values.to_numpy(dtype=np.int64)
        else:
            if values.dtype != np.float64:
                raise ValueError(f"column {column!r} is {values.dtype}, not float64")
            out[column] = values.to_numpy()
    return PairStore(str(settings[0]) if len(settings) else "", out.reset_index(drop=True))


def settings_print(
    articles: Iterable[object], langs: Sequence[str], replicates: int, seed: int, confidence: float
) -> str:
    """Fingerprint of everything besides the two models' rows that a pair's statistics depend on."""
    text = json.dumps(
        {
            "version": STORE_VERSION,
            "articles": [str(a) for a in articles],
            "languages": list(langs),
            "replicates": int(replicates),
            "seed": int(seed),
            "confidence": repr(float(confidence)),
            "blas": _blas(),
        }
    )
    return hashlib.blake2b(text.encode("utf-8"), digest_size=20).hexdigest()


def _blas() -> list[str]:
    """NumPy and its BLAS (library, version, kernel, threads): another BLAS may sum a product in
    another order, so a store written on another machine is not reused (its last bits may differ)."""
    try:
        threadpoolctl = importlib.import_module("threadpoolctl")
    except ImportError:  # without it, the BLAS cannot be told apart: numpy's version only
        return [np.__version__]
    found = [
        f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} {i.get('num_threads')}"
        for i in threadpoolctl.threadpool_info()
        if i.get("user_api") == "blas"
    ]
    return [np.__version__, *sorted(found)]


def model_prints(rows: pd.DataFrame, model_codes: np.ndarray, models: Sequence[str]) -> list[str]:
    """Per model, a fingerprint of its pair rows: their language, article, item and score, in order.

    The rows come in the suite's canonical order, in which a model's rows keep one order
    whatever other models are in the panel. Values are hashed, not codes, so the same rows
    give the same fingerprint in a panel of other models or with other category orders.
    """
    units = pd.util.hash_pandas_object(rows[["language", "doc_id", "item_id"]], index=False).to_numpy()
    y = rows["y"].to_numpy(dtype=np.float64)
    order = np.argsort(model_codes, kind="stable")
    bounds = np.searchsorted(model_codes[order], np.arange(len(models) + 1))
    out = []
    for m, name in enumerate(models):
        idx = order[bounds[m] : bounds[m + 1]]
        digest = hashlib.blake2b(str(name).encode("utf-8") + b"\0", digest_size=20)
        digest.update(np.ascontiguousarray(units[idx]).tobytes())
        digest.update(np.ascontiguousarray(y[idx]).tobytes())
        out.append(digest.hexdigest())
    return out


def pair_store(
    models: Sequence[str],
    prints: Sequence[str],
    settings: str,
    previous: PairStore | None,
    all_pairs: Callable[[], AllPairs],
) -> PairStore:
    """Every pair ``i < j`` of ``models`` (``combinations`` order): kept from ``previous`` or computed.

    ``all_pairs`` builds the pair machinery, only when some pair is not in ``previous``.
    """
    first, second = np.triu_indices(len(models), k=1)
    names, marks = np.asarray(models, dtype=object), np.asarray(prints, dtype=object)
    ids = pd.DataFrame(
        {"model_a": names[first], "model_b": names[second], "print_a": marks[first], "print_b": marks[second]}
    )
    kept = _kept(ids, settings, previous)
    todo = np.setdiff1d(np.arange(len(ids)), kept.index.to_numpy())
    parts = [kept]
    if len(todo):
        done = 0
        for block in all_pairs().blocks(pairs=(first[todo], second[todo])):
            parts.append(block_frame(block, todo[done : done + len(block.first)]))
            done += len(block.first)
    # Empty parts left out: pandas' concat would otherwise warn about their dtypes.
    stats = pd.concat([p for p in parts if len(p)]).sort_index() if len(ids) else _empty_stats()
    frame = pd.concat([ids, stats.reset_index(drop=True)], axis=1)
    return PairStore(settings, frame, computed=len(todo), reused=len(kept))


def _kept(ids: pd.DataFrame, settings: str, previous: PairStore | None) -> pd.DataFrame:
    """The statistics of the pairs ``previous`` holds under ``settings``, indexed by pair position."""
    if previous is None or previous.settings != settings or not len(previous.frame) or not len(ids):
        return _empty_stats()
    located = ids.reset_index().merge(previous.frame, on=ID_COLUMNS, how="inner", validate="one_to_one")
    return located.set_index("index")[STAT_COLUMNS]


def block_frame(block: PairBlock, positions: np.ndarray) -> pd.DataFrame:
    """A block's statistics, one row per pair at ``positions`` (its place in the pair order)."""
    columns: dict[str, np.ndarray] = {"common": np.asarray(block.common, dtype=np.int64)}
    for key in GAP_KEYS:
        for field in FIELDS:
            dtype = np.int64 if field in _INT_FIELDS else np.float64
            columns[f"{key}.{field}"] = np.asarray(getattr(block, field)[key], dtype=dtype)
    return pd.DataFrame(columns, index=positions)


def _empty_stats() -> pd.DataFrame:
    return pd.DataFrame(
        {c: np.array([], dtype=np.int64 if _is_int(c) else np.float64) for c in STAT_COLUMNS},
        index=pd.Index([], dtype=np.int64),
    )


@dataclass
class PairReuse:
    """What the suite is handed (``previous``) and hands back (``current``) of the pair store."""

    previous: PairStore | None = None
    current: PairStore | None = None
