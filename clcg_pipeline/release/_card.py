"""The release's data card (``README.md``): what is in it, what was removed and why, how to cite."""

from __future__ import annotations

from typing import Any


def _lines(rows: list[str]) -> str:
    return "\n".join(f"- {row}" for row in rows) if rows else "- (none)"


def render_card(manifest: dict[str, Any]) -> str:
    """Markdown from the manifest alone, so the card never says what the release does not hold."""
    redaction, people = manifest["redaction"], manifest["deidentification"]
    tables = [
        f"`{name}`: {info['rows']} rows in {info['files']} file(s)"
        for name, info in manifest["tables"].items()
    ]
    cells = [
        f"`{table}.{column}`: {n} cell(s)"
        for table, columns in redaction["cells"].items()
        for column, n in columns.items()
    ]
    dropped = [f"`{table}`: {', '.join(columns)}" for table, columns in people["dropped"].items() if columns]
    pseudo = [
        f"`{table}`: {', '.join(columns)}" for table, columns in people["pseudonymized"].items() if columns
    ]
    excluded = [f"`{name}`: {why}" for name, why in manifest["excluded"].items()]
    kept = [f"`{entry}`: {why}" for entry, why in redaction["kept"].items()]
    study = manifest["study"]
    citation = manifest.get("citation") or "(no citation given: set study.yaml release.citation)"
    return f"""# {manifest["name"]} {manifest["version"]}

A release of a Cross-Lingual Comprehension Gap study made with clcg-pipeline {study["package"]}
(config hash `{study["config_hash"]}`, code `{study["code_version"]}`), on {manifest["created_at"]}.
Licence: {manifest["licence"]}. Machine-readable: `datapackage.json` (Frictionless Data Package),
`manifest.json` (source versions, checksums of every file, code, prompts, models).

## What is in it

Every table of the finished study, as Parquet in the data folder's layout, and its documents
(`study_results.json` and the studies merged into it) as they were written:

{_lines(tables)}

Generated items, gold answers, model responses, scores, judgements and estimates are whole.

## What was removed, and why

The article text and the questions the source wrote are the corpus owners' work, not ours to
redistribute. Each such text is replaced by `[[clcg-redacted:<sha256 of its UTF-8 text>]]`, and
`release/text_index.parquet` says whose text each hash is (table, column, article, language,
paragraph id, item id). Where another column quotes one of these texts whole (from
{redaction["quote_min_chars"]} characters on: a response that copies a paragraph, a task built on
one), the quote is replaced the same way. Shorter quotations, such as a sentence inside a task
or an answer, are kept.

Redacted ({redaction["texts"]} texts):

{_lines(cells)}

Kept although they hold source text (their licence allows it):

{_lines(kept)}

Human validation is deidentified: annotator ids are replaced by pseudonyms ({people["pseudonyms"]}),
and free-text comments, timing (seconds spent, import times) and the annotation platform's ids
and files are left out. Every quality-control outcome is kept.

Pseudonymized: {_lines(pseudo)}

Left out: {_lines(dropped)}

Not in the release at all:

{_lines(excluded)}

## Rebuilding the text

With a local copy of the corpus ({manifest["sources"]["corpus"].get("kind")} source
`{manifest["sources"]["corpus"].get("name")}`):

    clcg reconstruct RELEASE --source PATH --out DATA

checks every hash against the corpus, names every text that differs, writes nothing unless all
match, and then `clcg estimate --config DATA/config --scores DATA --full --out results.json`
reproduces this release's `study_results.json` (see docs/RELEASE.md).

## How to cite

{citation}
"""
