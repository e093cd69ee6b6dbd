"""``clcg release`` and ``clcg reconstruct``: their parsers here, the work in ``clcg_pipeline.release``
(imported when the command runs, so every other command starts without it)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


def release_command(args: argparse.Namespace) -> int:
    from clcg_pipeline.config import default_config_dir, default_data_dir
    from clcg_pipeline.release import build_release

    started = time.perf_counter()
    summary = build_release(args.data or default_data_dir(), args.config or default_config_dir(), args.out)
    print(
        f"release: {summary.path} ({summary.tables} tables, {summary.files} files, "
        f"{summary.bytes / 1e6:.1f} MB, {summary.texts} texts redacted) "
        f"in {time.perf_counter() - started:.1f} s"
    )
    # Said after the summary line, where a publisher reads before publishing (and in the card).
    for caveat in summary.caveats:
        print(f"warning: {caveat}", file=sys.stderr)
    return 0


def reconstruct_command(args: argparse.Namespace) -> int:
    from clcg_pipeline.release import reconstruct_release

    started = time.perf_counter()
    summary = reconstruct_release(args.release, args.out, source=args.source)
    print(
        f"rebuilt: {summary.path} ({summary.texts} texts checked and restored, {summary.files} files) in "
        f"{time.perf_counter() - started:.1f} s"
    )
    if not getattr(args, "verify", False):
        # The whole document, as the study wrote it (run metadata aside); --verify compares it.
        print(
            f"next: clcg estimate --config {summary.path}/config --scores {summary.path} --full "
            "--out study_results.json re-derives study_results.json from the rebuilt tables "
            "(clcg reconstruct --verify compares it with the released one, leaf by leaf)"
        )
    sys.stdout.flush()
    return verify_rebuilt(summary.path) if getattr(args, "verify", False) else 0


def verify_rebuilt(folder: Any) -> int:
    """Re-derive study_results.json from a rebuilt folder and compare it, leaf by leaf, with the
    one it holds (run metadata aside): 0 when equal, 1 with each differing leaf named."""
    from clcg_pipeline.config import load_config
    from clcg_pipeline.results import (
        RUN_METADATA,
        as_written,
        derive_study_results,
        leaf_differences,
        sections_from_documents,
    )
    from clcg_pipeline.storage import read_json

    started = time.perf_counter()
    # Said first, whatever the outcome: these sections are compared with themselves.
    taken = sections_from_documents(str(folder))
    for key, reason in taken.items():
        print(f"note: {key}: taken from the released document: {reason}")
    derived = derive_study_results(str(folder), load_config(f"{folder}/config"))
    original = read_json(f"{folder}/study_results.json")
    differences = leaf_differences(original, as_written(derived.results))
    if differences:
        for line in differences:
            print(f"differs: {line}", file=sys.stderr)
        print(
            f"verify: {len(differences)} leaf/leaves of study_results.json differ when re-derived",
            file=sys.stderr,
        )
        # As JSON objects: the derived document is plain dicts (its type names the settings' model).
        plain: list[dict[str, Any]] = [original, dict(derived.results)]
        theirs, ours = ((d.get("settings") or {}).get("code_version") for d in plain)
        if theirs != ours:  # another checkout may give other last digits of a float, or more
            print(f"note: the study was computed by {theirs}, this re-derivation by {ours}", file=sys.stderr)
        return 1
    sections = f"every section but {', '.join(taken)} (see the note)" if taken else "every section"
    print(
        f"verified: study_results.json re-derived from {folder} equals the released one, {sections}, "
        f"except run metadata ({', '.join(RUN_METADATA)}) in {time.perf_counter() - started:.1f} s"
    )
    return 0


def add_release_parsers(subparsers: Any) -> None:
    """Add ``release`` and ``reconstruct`` to the ``clcg`` subcommands."""
    rel = subparsers.add_parser(
        "release", help="write a publishable release of a finished study (no source text)"
    )
    rel.add_argument("--config", help="config folder (default $CLCG_CONFIG_DIR or ./assets_config)")
    rel.add_argument("--data", help="the study's data folder (default $CLCG_DATA_DIR or ./clcg_data)")
    rel.add_argument("--out", required=True, help="new folder to write the release to")
    rel.set_defaults(func=release_command)
    rec = subparsers.add_parser(
        "reconstruct", help="rebuild a release's redacted text from a local copy of the corpus"
    )
    rec.add_argument("release", help="a folder written by `clcg release`")
    rec.add_argument(
        "--source", help="the local copy of the corpus (default: the path in the release's sources.yaml)"
    )
    rec.add_argument("--out", required=True, help="new folder to write the rebuilt data folder to")
    rec.add_argument(
        "--verify",
        action="store_true",
        help="then re-derive study_results.json from the rebuilt folder and compare it leaf by leaf",
    )
    rec.set_defaults(func=reconstruct_command)
