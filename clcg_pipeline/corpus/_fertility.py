"""Tokenizer fertility: tokens a language needs per English token, over parallel paragraphs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from clcg_pipeline.corpus._tokens import count_tokens

FERTILITY_COLUMNS = ["language", "fertility", "n_paragraphs", "n_articles", "tokenizer"]


def tokenizer_fertility(
    paragraphs: pd.DataFrame,
    *,
    reference: str,
    tokenizer: str = "cl100k_base",
    sample_size: int = 40,
    seed: int = 42,
) -> pd.DataFrame:
    """Per language: sum of its tokens / sum of the reference's tokens over the same paragraphs.

    Articles are a seeded sample (``sample_size``, drawn from the sorted doc ids having a
    reference version, so row order does not matter); inside it only paragraphs present and
    non-blank in both the language and the reference count, so missing text never lowers
    a ratio. The reference's own row is 1.0 by construction.
    """
    text = paragraphs["text"].fillna("").astype(str)
    paras = paragraphs.loc[text.str.strip() != "", ["doc_id", "language", "pid", "text"]]
    paras = paras.drop_duplicates(["doc_id", "language", "pid"])
    docs = sorted(paras.loc[paras["language"] == reference, "doc_id"].unique())
    if not docs:
        return pd.DataFrame(columns=FERTILITY_COLUMNS)
    rng = np.random.default_rng(seed)
    picked = {docs[i] for i in rng.choice(len(docs), size=min(sample_size, len(docs)), replace=False)}
    paras = paras[paras["doc_id"].isin(picked)].copy()
    paras["n_tokens"] = count_tokens(paras["text"].tolist(), tokenizer)
    ref = paras.loc[paras["language"] == reference, ["doc_id", "pid", "n_tokens"]]
    pairs = paras.merge(ref, on=["doc_id", "pid"], suffixes=("", "_ref"))
    out = (
        pairs.groupby("language")
        .agg(
            _tok=("n_tokens", "sum"),
            _ref=("n_tokens_ref", "sum"),
            n_paragraphs=("pid", "size"),
            n_articles=("doc_id", "nunique"),
        )
        .reset_index()
    )
    out["fertility"] = out["_tok"] / out["_ref"].where(out["_ref"] > 0)
    out["tokenizer"] = tokenizer
    return out[FERTILITY_COLUMNS].sort_values("language").reset_index(drop=True)
