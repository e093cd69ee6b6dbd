"""``clcg annotations push`` / ``pull``: the argparse wiring of the Label Studio round trip.

The CLI calls ``add_annotation_parsers(subparsers)``; each command returns an exit code and
raises LabelStudioError (one line, naming the URL, never the token) for the CLI to print.
"""

from __future__ import annotations

import argparse
from pathlib import Path

# The variables' names only: the Label Studio code itself is imported when a command runs, so
# every other command starts without Dagster.
URL_ENV, TOKEN_ENV = "LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY"

_ENV_NOTE = f"Label Studio's URL and API token come from ${URL_ENV} and ${TOKEN_ENV} (never an option)."


def _say(line: str) -> None:
    print(line, flush=True)


def _dirs(args: argparse.Namespace) -> tuple[str, str]:
    """The config folder and data folder of ``--config``/``--data``, else their defaults."""
    from clcg_pipeline.config import default_config_dir, default_data_dir

    config_dir = str(args.config) if args.config else str(default_config_dir())
    return config_dir, (str(args.data) if args.data else default_data_dir())


def cmd_push(args: argparse.Namespace) -> int:
    from clcg_pipeline.validation.human import push_annotation_projects

    config_dir, data_dir = _dirs(args)
    push_annotation_projects(config_dir, data_dir, study=args.study, log=_say)
    return 0


def cmd_pull(args: argparse.Namespace) -> int:
    from clcg_pipeline.validation.human import pull_annotation_exports

    config_dir, data_dir = _dirs(args)
    pull_annotation_exports(config_dir, data_dir, study=args.study, log=_say)
    return 0


def add_annotation_parsers(subparsers: argparse._SubParsersAction) -> None:
    """``annotations push`` and ``annotations pull`` under the CLI's subcommands."""
    annotations = subparsers.add_parser(
        "annotations",
        help="push the study's annotation projects to Label Studio, pull its exports into the inbox",
        description=_ENV_NOTE,
    )
    commands = annotations.add_subparsers(dest="annotations_command", required=True)
    push = commands.add_parser(
        "push",
        help="create or update the Label Studio projects (config, tasks, overlap) from the export",
        description="Idempotent: projects are found by title, tasks by task_id. " + _ENV_NOTE,
    )
    pull = commands.add_parser(
        "pull",
        help="fetch each project's whole JSON export into the study's annotation inbox",
        description="The next `clcg run` imports it (ratings seen before are skipped). " + _ENV_NOTE,
    )
    for command, func in ((push, cmd_push), (pull, cmd_pull)):
        command.add_argument(
            "--config", type=Path, help="config folder (default $CLCG_CONFIG_DIR or ./assets_config)"
        )
        command.add_argument("--data", help="data folder or URL (default $CLCG_DATA_DIR or ./clcg_data)")
        command.add_argument(
            "--study",
            help="the project titles' prefix, '<study> · single' etc. (default: the primary source's name)",
        )
        command.set_defaults(func=func)
