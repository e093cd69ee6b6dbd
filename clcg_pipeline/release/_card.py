"""The release's data card (``README.md``): what is in it, what was removed and why, how to cite."""

from __future__ import annotations

from typing import Any


def _lines(rows: list[str]) -> str:
    return "\n".join(f"- {row}" for row in rows) if rows else "- (none)"


def _documents(found: dict[str, Any]) -> str:
    changed = [f"`{name}` {info['strings']}" for name, info in found.items() if info["strings"]]
    return ", ".join(changed) if changed else "none"


def _caveats(rows: list[str]) -> str:
    """The card's first section when the study has simulated parts or unidentifiable headlines."""
    if not rows:
        return ""
    return "\n## Read this first\n\n" + _lines(rows) + "\n"


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
{_caveats(manifest.get("caveats", []))}
## What is in it

Every table of the finished study, as Parquet in the data folder's layout, and its documents
(`study_results.json` and the studies merged into it) as they were written:

{_lines(tables)}

Generated items, gold answers, model responses, scores, judgements and estimates are whole,
but for the runs of article text in their text (below). List columns are JSON text (one JSON
array per cell: what the Data Package's `array` type reads).

## What was removed, and why

The article text and the questions the source wrote are the corpus owners' work, not ours to
redistribute. Each such text is replaced by `[[clcg-redacted:<sha256 of its UTF-8 text>]]`, and
`release/text_index.parquet` says whose text each hash is (table, column, article, language,
paragraph id, item id). Wherever else the study's tables or documents reproduce
{redaction["quote_min_chars"]} or more characters of one of these texts (a response that copies a
paragraph, a task or a drill-down built on one), that run is replaced by
`[[clcg-quote:<sha256>:<start>-<end>]]` (the span's character offsets in that text), or by the
text's own marker when it is copied whole. Shorter runs are kept.

Replaced ({redaction["texts"]} texts; cells per column):

{_lines(cells)}

Strings replaced in the documents: {_documents(redaction.get("documents", {}))}

Kept although they hold source text (their licence allows it):

{_lines(kept)}

Human validation is deidentified: annotator ids are replaced by pseudonyms ({people["pseudonyms"]}),
and free-text comments, timing (seconds spent, import times) and the annotation platform's ids
and files are left out. Every quality-control outcome is kept.

Pseudonymized:

{_lines(pseudo)}

Left out:

{_lines(dropped)}

Local paths (the corpus, data and config folders, home folders) and every model's `base_url`
are replaced by `<corpus>`, `<data>`, `<config>`, `<home>` and `<base_url of MODEL>` in the
config files, the documents and the manifest.

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
