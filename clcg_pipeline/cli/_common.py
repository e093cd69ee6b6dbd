"""What every ``clcg`` subcommand shares: the console, the one error convention and the common options.

The convention: every error is one line on stderr starting ``error:`` (``error_line``). A usage
error (an unknown option, model or language, a bad value: ``UsageError`` or argparse's own)
exits 2 before anything runs; an error while running (bad config, missing file) exits 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from clcg_pipeline.config import ModelsConfig


def _console_width() -> int | None:
    """A terminal's own width (its tables fit it); a pipe or CI log gets at least 140 columns."""
    if sys.stdout.isatty():
        return None  # rich follows the terminal, resizes included
    return max(Console().width, 140)


# Piped or logged, a line is never broken mid-phrase (soft wrap: the reader's pager or editor
# wraps it, if at all); a terminal wraps at its own width.
console = Console(stderr=False, width=_console_width(), soft_wrap=not sys.stdout.isatty())


def say(line: str) -> None:
    """One line on stderr, never wrapped (rich would break a long path over several lines)."""
    sys.stderr.write(line.rstrip("\n") + "\n")


def error_line(message: str) -> str:
    """``message`` as the one ``error: ...`` line every subcommand prints (inner newlines joined)."""
    return "error: " + " ".join(part.strip() for part in message.splitlines() if part.strip())


def say_error(message: str) -> None:
    """Print ``error_line(message)`` on stderr; the caller returns 1 (run error) or raises ``UsageError``."""
    say(error_line(message))


class UsageError(ValueError):
    """A bad value on the command line: one ``error:`` line, exit code 2, before anything runs."""


def dirs(args: argparse.Namespace) -> tuple[str, str]:
    """The config folder and data folder of ``--config``/``--data``, else their defaults."""
    from clcg_pipeline.config import default_config_dir, default_data_dir

    config_dir = str(args.config) if args.config else str(default_config_dir())
    data_dir = str(args.data) if args.data else default_data_dir()
    return config_dir, data_dir


def outside_project(args: argparse.Namespace) -> bool:
    """No ``--config``, no ``$CLCG_CONFIG_DIR`` and no ``./assets_config``: the config is a fallback."""
    from clcg_pipeline.config import CONFIG_ENV

    return not args.config and not os.environ.get(CONFIG_ENV) and not (Path.cwd() / "assets_config").is_dir()


def check_config_in_reach(args: argparse.Namespace, config_dir: str) -> None:
    """Outside a project, a fallback config folder that is not there is a usage error naming the ways in."""
    if outside_project(args) and not Path(config_dir).is_dir():
        raise UsageError(
            f"no config in reach: {Path.cwd()} has no assets_config/ and neither --config nor "
            "$CLCG_CONFIG_DIR is given"
        )


def csv(value: str | None) -> list[str] | None:
    """A comma-separated option as its parts (blanks dropped); ``None`` when not given."""
    return [part.strip() for part in value.split(",") if part.strip()] if value else None


def auxiliary_ids(models: ModelsConfig) -> list[str]:
    """The ids of the config's judges and writers (``evaluated: false``)."""
    evaluated = {m.id for m in models.evaluated}
    return [m.id for m in models.models if m.id not in evaluated]


def check_selection(
    option: str, chosen: list[str] | None, known: list[str], auxiliary: Sequence[str] = ()
) -> None:
    """An id in ``chosen`` that is not ``known`` is a usage error naming it and the known ones.

    An ``auxiliary`` id (a judge or writer, ``evaluated: false``) is in the config but answers no
    item: the error says so rather than call it unknown.
    """
    aside = [value for value in chosen or [] if value not in known and value in auxiliary]
    if aside:
        raise UsageError(
            f"{option}: {', '.join(aside)} not evaluated (evaluated: false in models.yaml: a judge or "
            f"writer, it answers no item); the evaluated models are {', '.join(known)}"
        )
    unknown = [value for value in chosen or [] if value not in known]
    if unknown:
        raise UsageError(f"{option}: unknown {', '.join(unknown)}; the config has {', '.join(known)}")
