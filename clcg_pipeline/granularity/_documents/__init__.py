"""Long documents of configured token lengths, split into regions and paragraph positions.

Two sources (``study.granularity.source``):

- ``assembled``: the study's aligned articles, in a seeded order, concatenated until a
  bucket's length. Only articles complete in every included language (``corpus_audit``) are
  used, and only paragraph ids present in every included language are kept, so every
  language version of a document has the same ``pid``s (``"<source_doc_id>:<source_pid>"``)
  and a task built once from English applies to every language. Assembled documents have no
  summary of their own.
- a path: a long-document corpus in the canonical JSONL (``articles/<lang>.jsonl``, one
  record per document x language, paragraph-aligned by ``pid``), each record optionally with
  a ``summary``. Each document falls in the first bucket its English token count fits.

Tokens are counted on the English version with the study's tokenizer
(``study.fertility.tokenizer``). Regions (begin / middle / end) are thirds of the English
document, by tokens (a paragraph belongs to the third holding its token midpoint) or by
paragraphs; a paragraph's ``position`` is its third within its region (by paragraph count).

One module per concern: the tables' contract (``_contract``), sentences (``_sentences``),
regions and aligned rows (``_regions``), assembling from the study corpus (``_assemble``),
the JSONL source (``_long_corpus``), and the configured source's choice (``_build``).
"""

from clcg_pipeline.granularity._documents._assemble import assemble_documents
from clcg_pipeline.granularity._documents._build import build_long_documents
from clcg_pipeline.granularity._documents._contract import (
    LONG_DOCUMENT_COLUMNS,
    LONG_PARAGRAPH_COLUMNS,
    THIRDS,
    BucketReport,
    DocumentError,
    LongDocuments,
    text_hash,
)
from clcg_pipeline.granularity._documents._long_corpus import load_long_documents, read_long_corpus
from clcg_pipeline.granularity._documents._regions import assign_positions, assign_regions, third
from clcg_pipeline.granularity._documents._sentences import blank_sentence, sentence_spans, split_sentences

__all__ = [
    "LONG_DOCUMENT_COLUMNS",
    "LONG_PARAGRAPH_COLUMNS",
    "THIRDS",
    "BucketReport",
    "DocumentError",
    "LongDocuments",
    "assemble_documents",
    "assign_positions",
    "assign_regions",
    "blank_sentence",
    "build_long_documents",
    "load_long_documents",
    "read_long_corpus",
    "sentence_spans",
    "split_sentences",
    "text_hash",
    "third",
]
