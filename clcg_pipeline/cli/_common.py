"""What every ``clcg`` subcommand shares: the console, usage errors and the common options."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console


def _console_width() -> int | None:
    """A terminal's own width (its tables fit it); a pipe or CI log gets at least 140 columns."""
    if sys.stdout.isatty():
        return None  # rich follows the terminal, resizes included
    return max(Console().width, 140)


console = Console(stderr=False, width=_console_width())


def say(line: str) -> None:
    """One line on stderr, never wrapped (rich would break a long path over several lines)."""
    sys.stderr.write(line.rstrip("\n") + "\n")


class UsageError(ValueError):
    """A bad value on the command line: one ``error:`` line, exit code 2, before anything runs."""


def dirs(args: argparse.Namespace) -> tuple[str, str]:
    """The config folder and data folder of ``--config``/``--data``, else their defaults."""
    from clcg_pipeline.config import default_config_dir, default_data_dir

    config_dir = str(args.config) if args.config else str(default_config_dir())
    data_dir = str(args.data) if args.data else default_data_dir()
    return config_dir, data_dir


def csv(value: str | None) -> list[str] | None:
    """A comma-separated option as its parts (blanks dropped); ``None`` when not given."""
    return [part.strip() for part in value.split(",") if part.strip()] if value else None


def check_selection(option: str, chosen: list[str] | None, known: list[str]) -> None:
    """An id in ``chosen`` that is not ``known`` is an error naming it and the known ones."""
    unknown = [value for value in chosen or [] if value not in known]
    if unknown:
        raise ValueError(f"{option}: unknown {', '.join(unknown)}; the config has {', '.join(known)}")
