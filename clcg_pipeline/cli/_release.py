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
    return 0


def reconstruct_command(args: argparse.Namespace) -> int:
    from clcg_pipeline.release import reconstruct_release

    started = time.perf_counter()
    summary = reconstruct_release(args.release, args.out, source=args.source)
    print(
        f"rebuilt: {summary.path} ({summary.texts} texts checked and restored, {summary.files} files) in "
        f"{time.perf_counter() - started:.1f} s; next: clcg estimate --config {summary.path}/config "
        f"--scores {summary.path} --full --out results.json"
    )
    sys.stdout.flush()
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
    rec.set_defaults(func=reconstruct_command)
