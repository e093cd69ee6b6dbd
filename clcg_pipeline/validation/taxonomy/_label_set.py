"""The versioned error taxonomy (``taxonomy/<id>.yaml``): labels, collapsed map, semantic grouping.

The file is package data, so an installed wheel carries it. Loading validates it whole:
every label defined once with a definition, the collapsed map total over the labels, the
semantic-error group a subset of them; a broken file is one error naming file and field.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

TAXONOMY_DIR = Path(__file__).resolve().parent  # the label sets (*.yaml) sit beside this module
LABEL_COUNT = 9
COLLAPSED_COUNT = 7


class _Label(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z][a-z_]*$")
    definition: str = Field(min_length=10)

    @field_validator("definition")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\n" in value.strip():
            raise ValueError("a definition is one line")
        return value.strip()


class _TaxonomyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    labels: list[_Label]
    collapsed: dict[str, str]
    semantic_errors: list[str]

    @model_validator(mode="after")
    def _consistent(self) -> _TaxonomyFile:
        names = [label.name for label in self.labels]
        if len(names) != LABEL_COUNT or len(set(names)) != LABEL_COUNT:
            raise ValueError(f"labels: need {LABEL_COUNT} distinct labels, got {names}")
        if "correct" not in names:
            raise ValueError("labels: 'correct' is required (crosslingual_loss needs it)")
        if set(self.collapsed) != set(names):
            missing = sorted(set(names) - set(self.collapsed))
            unknown = sorted(set(self.collapsed) - set(names))
            raise ValueError(f"collapsed: must map exactly the labels; missing {missing}, unknown {unknown}")
        classes = set(self.collapsed.values())
        if len(classes) != COLLAPSED_COUNT:
            raise ValueError(f"collapsed: need {COLLAPSED_COUNT} classes, got {sorted(classes)}")
        if self.collapsed["correct"] != "correct" or list(self.collapsed.values()).count("correct") != 1:
            raise ValueError("collapsed: 'correct' must map to itself and nothing else may map to 'correct'")
        unknown = sorted(set(self.semantic_errors) - set(names))
        if unknown or "correct" in self.semantic_errors or not self.semantic_errors:
            raise ValueError(
                f"semantic_errors: must be non-empty labels other than 'correct'; unknown {unknown}"
            )
        return self


@dataclass(frozen=True)
class Taxonomy:
    """A loaded taxonomy: labels in file order with their definitions, and the two groupings."""

    id: str
    definitions: dict[str, str]
    collapsed: dict[str, str]
    semantic_errors: frozenset[str]

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.definitions)

    @property
    def collapsed_labels(self) -> tuple[str, ...]:
        """The collapsed classes in the order of their first fine label."""
        return tuple(dict.fromkeys(self.collapsed[label] for label in self.labels))

    def collapse(self, label: str | None) -> str | None:
        return None if label is None else self.collapsed[label]

    def is_semantic_error(self, label: str | None) -> bool | None:
        return None if label is None else label in self.semantic_errors

    def definitions_text(self) -> str:
        """``- label: definition`` lines, as quoted in the judge prompt."""
        return "\n".join(f"- {name}: {text}" for name, text in self.definitions.items())


def taxonomy_path(taxonomy_id: str) -> Path:
    return TAXONOMY_DIR / f"{taxonomy_id}.yaml"


def parse_taxonomy(path: Path) -> Taxonomy:
    """Load and validate one taxonomy file; errors name the file and the field."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"taxonomy file {path}: {exc}") from None
    try:
        parsed = _TaxonomyFile.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(file)"
        raise ValueError(f"taxonomy file {path}: {where}: {err['msg']}") from None
    if parsed.id != path.stem:
        raise ValueError(f"taxonomy file {path}: id {parsed.id!r} does not match the file name")
    return Taxonomy(
        id=parsed.id,
        definitions={label.name: label.definition for label in parsed.labels},
        collapsed=dict(parsed.collapsed),
        semantic_errors=frozenset(parsed.semantic_errors),
    )


@functools.cache
def load_taxonomy(taxonomy_id: str = "clcg-error-v1") -> Taxonomy:
    """The shipped taxonomy ``taxonomy_id`` (study.yaml ``error_taxonomy.taxonomy``)."""
    path = taxonomy_path(taxonomy_id)
    if not path.is_file():
        shipped = sorted(p.stem for p in TAXONOMY_DIR.glob("*.yaml"))
        raise ValueError(
            f"error_taxonomy.taxonomy {taxonomy_id!r}: no such taxonomy file; shipped: {shipped}"
        )
    return parse_taxonomy(path)
