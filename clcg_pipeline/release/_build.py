"""``build_release``: a finished study's data folder -> a publishable release folder (the I/O edge).

Everything is checked before anything is written, the release is assembled in a temporary
sibling folder and renamed into place at the end, and it is scanned for leaks before that
rename: a failed build leaves no release behind.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.resources
import json
import os
import re
import secrets
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from clcg_pipeline.config import ProjectConfig, ReleaseSettings, code_versions, load_config
from clcg_pipeline.release import _datapackage
from clcg_pipeline.release._card import render_card
from clcg_pipeline.release._caveats import caveats
from clcg_pipeline.release._documents import redact_document
from clcg_pipeline.release._leaks import scan_release
from clcg_pipeline.release._lists import encode_lists, json_columns
from clcg_pipeline.release._manifest import CALL_TABLES, model_entries, prompt_hashes, source_versions
from clcg_pipeline.release._people import deidentify
from clcg_pipeline.release._places import Places
from clcg_pipeline.release._redact import redact_table
from clcg_pipeline.release._spans import SpanFinder
from clcg_pipeline.release._texts import HOMES, SOURCE_TABLES, check_redact, collect_texts
from clcg_pipeline.storage import RECORDS, DocumentError, read_all_partitions, read_leaderboard, read_records

FORMAT = "clcg-release/1"
MANIFEST, DATAPACKAGE, CARD, CONFIG, INDEX = (
    "manifest.json",
    "datapackage.json",
    "README.md",
    "config",
    "release/text_index.parquet",
)
CONFIG_FILES = ("languages.yaml", "models.yaml", "study.yaml", "sources.yaml")
#: what of a data folder a release leaves out, and why (said in the manifest and the card)
EXCLUDED = {
    "annotation_exports": "the list of task files made for the annotation platform (they hold article text)",
    "annotation_imports": "the log of annotators' raw export files (platform file names and checksums)",
    "annotations": "the annotators' raw exports and the platform's task files",
    "cache": "the model-call cache (its prompts hold the article text)",
    RECORDS: "the run records (their code versions are in the manifest)",
    "clcg.duckdb": "the query catalog (`clcg query` builds it again)",
    "report.html": "the rendered report (`clcg report` renders it again from study_results.json)",
}
_MANIFEST_TABLES = (*SOURCE_TABLES, "corpus_audit", "study_sample", "long_documents", *CALL_TABLES)
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)


class ReleaseError(ValueError):
    """A release cannot be built (or rebuilt) as asked; nothing was written."""


@dataclass(frozen=True)
class ReleaseSummary:
    path: Path
    files: int
    bytes: int
    texts: int
    tables: int
    #: what a reader must be told first (simulated parts, headline estimates not identifiable)
    caveats: tuple[str, ...] = ()


def table_files(data: Path) -> dict[str, list[Path]]:
    """Each table of the data folder (a folder holding Parquet files) and its files, sorted."""
    found: dict[str, list[Path]] = {}
    for child in sorted(data.iterdir()):
        if child.is_dir() and child.name not in EXCLUDED:
            files = sorted(child.rglob("*.parquet"))
            if files:
                found[child.name] = files
    return found


def documents(data: Path) -> list[Path]:
    """The data folder's own documents (study_results.json, the studies', the leaderboard)."""
    return sorted(
        p for p in data.iterdir() if p.is_file() and p.suffix in (".json", ".csv") and p.name not in EXCLUDED
    )


def check_documents(data: Path) -> None:
    """The documents with a typed shape checked before anything is written: a release never
    publishes a ``leaderboard.json`` its own reader would refuse (issue 34)."""
    leaderboard = data / "leaderboard.json"
    if leaderboard.is_file():
        try:
            read_leaderboard(leaderboard)
        except DocumentError as exc:
            raise ReleaseError(f"{exc}; nothing written") from None


def check_entries(settings: ReleaseSettings) -> list[str]:
    """The redact list, after every setting names ``table.column`` (else an error naming it)."""
    for option in ("drop", "pseudonymize"):
        bad = [e for e in getattr(settings, option) if e.count(".") != 1 or not all(e.split("."))]
        if bad:
            raise ReleaseError(f"study.yaml release.{option}: {', '.join(bad)}: expected table.column")
    try:
        return check_redact(settings.redact)
    except ValueError as exc:
        raise ReleaseError(str(exc)) from None


def _pseudonym_key(settings: ReleaseSettings) -> tuple[bytes, str]:
    value = os.environ.get(settings.key_env)
    if value:
        return value.encode(
            "utf-8"
        ), f"HMAC-SHA256 under the publisher's key (${settings.key_env}), stable across releases"
    warnings.warn(
        f"${settings.key_env} is not set: annotator pseudonyms use a random key, discarded after this build, "
        "so they differ from those of any other release; set it to keep them stable",
        stacklevel=3,
    )
    return secrets.token_bytes(32), "HMAC-SHA256 under a random key discarded after the build"


def _secrets(config: ProjectConfig, settings: ReleaseSettings) -> list[str]:
    """Values of the key variables the config names, and of any variable named like a secret."""
    names = {m.api_key_env for m in config.models.models if m.api_key_env} | {settings.key_env}
    names |= {name for name in os.environ if _SECRET_NAME.search(name)}
    return sorted({os.environ[n] for n in names if len(os.environ.get(n, "")) >= 8})


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _source_files(config: ProjectConfig) -> list[dict[str, str]]:
    """sha256 of every file of a local source (the demo's packaged files included)."""
    source = config.sources.primary
    if source.kind == "demo":
        with importlib.resources.as_file(
            importlib.resources.files("clcg_pipeline.corpus") / "demo_data"
        ) as path:
            root = Path(path)
            return [
                {"path": p.relative_to(root).as_posix(), "sha256": sha256_file(p)}
                for p in sorted(root.rglob("*"))
                if p.is_file()
            ]
    if source.path is None or "://" in source.path or not Path(source.path).exists():
        return []
    root = Path(source.path)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    return [
        {
            "path": (p.relative_to(root) if root.is_dir() else Path(p.name)).as_posix(),
            "sha256": sha256_file(p),
        }
        for p in files
    ]


def check_new(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"{out}: already exists; give a new folder (nothing is overwritten)")


@contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A temporary sibling of ``out``, renamed to ``out`` when the block succeeds, else removed."""
    check_new(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        yield staging
        if out.exists():
            out.rmdir()
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def build_release(data_dir: str | Path, config_dir: str | Path, out: str | Path) -> ReleaseSummary:
    """Write the release of the finished study in ``data_dir`` to the new folder ``out``."""
    data, target = Path(data_dir), Path(out)
    if "://" in str(data_dir) or "://" in str(out):
        raise ReleaseError("clcg release reads and writes local folders; copy a remote data folder first")
    if not (data / "study_results.json").is_file():
        raise ReleaseError(
            f"{data}: no study_results.json; a release is made of a finished study (run `clcg run`)"
        )
    check_new(target)
    check_documents(data)
    config = load_config(config_dir)
    settings = config.study.release
    redact = check_entries(settings)
    frames = {name: read_all_partitions(str(data), name) for name in _MANIFEST_TABLES}
    index = collect_texts(frames, redact)
    key, scheme = _pseudonym_key(settings)
    places = Places.of(config, data, Path(config_dir))
    # One finder for tables and documents alike: the one rule for article text (``_spans``).
    finder = SpanFinder.of(index["text"], settings.quote_min_chars)
    with staged(target) as staging:
        report = _write_tables(data, staging, redact, finder, settings, key)
        report["documents"] = _copy_documents(data, Path(config_dir), staging, places, finder)
        (staging / INDEX).parent.mkdir(parents=True, exist_ok=True)
        index.drop(columns="text").to_parquet(staging / INDEX, index=False, compression="none")
        manifest = _manifest(config, data, frames, redact, index, report, scheme)
        manifest = json.loads(places.replace(json.dumps(manifest)))
        _write_datapackage(staging, manifest, report)
        (staging / CARD).write_text(render_card(manifest), encoding="utf-8")
        manifest["files"] = _checksums(staging)
        (staging / MANIFEST).write_text(
            json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        leaks = scan_release(
            staging,
            index["text"],
            {"annotator id": report["ids"], "secret": _secrets(config, settings)},
            width=settings.quote_min_chars,
            kept=[entry for entry in HOMES if entry not in redact],
        ) + _unplaced(staging, places)
        if leaks:
            raise ReleaseError(
                f"the release would leak {len(leaks)} thing(s); nothing written: " + "; ".join(leaks[:20])
            )
        files = manifest["files"]
    return ReleaseSummary(
        target,
        len(files) + 1,
        sum(f["bytes"] for f in files),
        len(index),
        len(report["tables"]),
        tuple(manifest["caveats"]),
    )


def _write_tables(
    data: Path, staging: Path, redact: list[str], finder: SpanFinder, settings: ReleaseSettings, key: bytes
) -> dict[str, Any]:
    """Every table file, redacted and deidentified, uncompressed (so a byte search sees its text)."""
    report: dict[str, Any] = {
        "tables": {},
        "cells": {},
        "dropped": {},
        "pseudonymized": {},
        "ids": set(),
        "schemas": {},
    }
    for name, files in table_files(data).items():
        rows, paths = 0, []
        for file in files:
            table, changed = redact_table(name, pq.read_table(file), redact, finder)
            people = deidentify(name, table, drop=settings.drop, pseudonymize=settings.pseudonymize, key=key)
            relative = file.relative_to(data)
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(encode_lists(people.table), staging / relative, compression="none")
            for column, n in changed.items():
                report["cells"].setdefault(name, {}).setdefault(column, 0)
                report["cells"][name][column] += n
            report["dropped"][name] = sorted(set(report["dropped"].get(name, [])) | set(people.dropped))
            report["pseudonymized"][name] = sorted(
                set(report["pseudonymized"].get(name, [])) | set(people.pseudonymized)
            )
            report["ids"] |= people.ids
            report["schemas"][name] = people.table.schema
            rows += people.table.num_rows
            paths.append(relative.as_posix())
        report["tables"][name] = {"files": len(files), "rows": rows, "paths": paths}
    return report


def _copy_documents(
    data: Path, config_dir: Path, staging: Path, places: Places, finder: SpanFinder
) -> dict[str, dict[str, Any]]:
    """The documents (article text referenced) and config files, local paths and endpoints
    replaced by placeholders; returns per document how many strings changed and its escaping."""
    found = {}
    for document in documents(data):
        # Bytes decoded (no newline translation): a document with nothing to change is copied as it was.
        text, changed, ascii_only = redact_document(document, document.read_bytes().decode("utf-8"), finder)
        (staging / document.name).write_bytes(places.replace(text).encode("utf-8"))
        found[document.name] = {"strings": changed, "json_ascii": ascii_only}
    (staging / CONFIG).mkdir()
    for name in CONFIG_FILES:
        text = (config_dir / name).read_bytes().decode("utf-8")
        (staging / CONFIG / name).write_bytes(places.replace(text).encode("utf-8"))
    return found


def _unplaced(staging: Path, places: Places) -> list[str]:
    """Local paths or endpoints left in a text file of the release (Parquet cells are the study's)."""
    hits = []
    for path in sorted(p for p in staging.rglob("*") if p.is_file() and p.suffix != ".parquet"):
        for placeholder in places.found(path.read_text(encoding="utf-8", errors="replace")):
            hits.append(f"{path.relative_to(staging).as_posix()}: local path or endpoint ({placeholder})")
    return hits


def _manifest(
    config: ProjectConfig,
    data: Path,
    frames: dict[str, pd.DataFrame],
    redact: list[str],
    index: pd.DataFrame,
    report: dict[str, Any],
    scheme: str,
) -> dict[str, Any]:
    settings = config.study.release
    results = json.loads((data / "study_results.json").read_text(encoding="utf-8"))
    code = results.get("settings", {}).get("code_version", {})
    records = {
        name: sorted(
            {
                str(r.get("code_version"))
                for r in read_records(str(data), name).values()
                if r.get("code_version")
            }
        )
        for name in report["tables"]
    }
    return {
        "format": FORMAT,
        "name": f"clcg-study-{config.config_hash[:12]}",
        "caveats": caveats(results),
        "version": settings.version,
        "created_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "licence": settings.licence,
        "citation": settings.citation,
        "study": {
            "package": code.get("package"),
            "code_version": code.get("git_commit") or code.get("package"),
            "config_hash": config.config_hash,
            "code_versions": code_versions(config),
            "table_code_versions": {name: versions for name, versions in records.items() if versions},
            "generated_at": results.get("settings", {}).get("generated_at"),
        },
        "models": model_entries(config, frames),
        "prompts": prompt_hashes({**frames, **_prompt_tables(data, report)}),
        "sources": {
            "corpus": config.sources.primary.model_dump(mode="json"),
            "files": _source_files(config),
            "versions": source_versions(frames, redact),
        },
        "redaction": {
            "marker": "[[clcg-redacted:<sha256 of the UTF-8 text>]]",
            "quote_marker": "[[clcg-quote:<sha256 of the text>:<start>-<end>]] (character offsets in it)",
            "redacted": redact,
            "kept": {
                e: "kept whole (study.yaml release.redact leaves it out)" for e in HOMES if e not in redact
            },
            "quote_min_chars": settings.quote_min_chars,
            "texts": len(index),
            "cells": report["cells"],
            "documents": report["documents"],
            "index": INDEX,
        },
        "deidentification": {
            "pseudonyms": scheme,
            "pseudonymized": {k: v for k, v in report["pseudonymized"].items() if v},
            "dropped": {k: v for k, v in report["dropped"].items() if v},
        },
        "excluded": {name: why for name, why in EXCLUDED.items() if (data / name).exists()},
        "tables": {
            name: {"files": info["files"], "rows": info["rows"]} for name, info in report["tables"].items()
        },
    }


def _prompt_tables(data: Path, report: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """The tables whose rows name a prompt (items, judgements, keypoints): only those columns read."""
    out = {}
    for name, info in report["tables"].items():
        columns = [
            c
            for c in ("prompt_version", "template_hash", "prompt_hash")
            if c in report["schemas"][name].names
        ]
        if columns and name not in CALL_TABLES:
            out[name] = pd.concat(
                [pq.read_table(data / p, columns=columns).to_pandas() for p in info["paths"]]
            )
    return out


def _write_datapackage(staging: Path, manifest: dict[str, Any], report: dict[str, Any]) -> None:
    """datapackage.json, refused (nothing written) when frictionless finds it invalid."""
    notes = {
        e.split(".", 1)[1]: "source text: [[clcg-redacted:<sha256>]] markers (release/text_index.parquet)"
        for e in manifest["redaction"]["redacted"]
    }
    redacted_tables = {e.split(".")[0] for e in manifest["redaction"]["redacted"]}
    resources = []
    for name, info in report["tables"].items():
        for path in info["paths"]:
            schema = pq.read_schema(staging / path)
            resources.append(
                _datapackage.resource(
                    name if len(info["paths"]) == 1 else path.removesuffix("/data.parquet"),
                    path,
                    schema,
                    json_columns(schema),
                    notes if name in redacted_tables else {},
                    f"table {name} ({info['rows']} rows in {len(info['paths'])} file(s)): {path}",
                )
            )
    resources.append(
        _datapackage.resource(
            "text_index", INDEX, pq.read_schema(staging / INDEX), {}, {}, "whose text each redaction hash is"
        )
    )
    document = _datapackage.descriptor(
        name=manifest["name"],
        version=manifest["version"],
        title="Cross-Lingual Comprehension Gap study release",
        licence=manifest["licence"],
        created=manifest["created_at"],
        resources=resources,
    )
    errors = _datapackage.validate(document)
    if errors:
        raise ReleaseError("datapackage.json is not a valid Data Package: " + "; ".join(errors))
    (staging / DATAPACKAGE).write_text(
        json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def _checksums(staging: Path) -> list[dict[str, Any]]:
    return [
        {"path": p.relative_to(staging).as_posix(), "bytes": p.stat().st_size, "sha256": sha256_file(p)}
        for p in sorted(staging.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    ]
