"""Local paths and model endpoints replaced by placeholders in the release's text files.

The corpus path, the data and config folders, home folders (they name their user) and every
model's ``base_url`` (an endpoint may be private, and its host says where the study ran) are
the publisher's, not the study's: config files, documents, manifest and card hold
``<corpus>``, ``<data>``, ``<config>``, ``<home>`` and ``<base_url of MODEL>`` instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from clcg_pipeline.config import ProjectConfig

# Someone's home folder, whoever's: /home/NAME, /Users/NAME, C:\Users\NAME
_HOMES = re.compile(r"(/home/|/Users/|[A-Za-z]:\\\\?Users\\\\?)[^/\\\s\"'`]+")


@dataclass(frozen=True)
class Places:
    """Literal text -> placeholder, longest first (a folder inside another is replaced whole)."""

    literals: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def of(cls, config: ProjectConfig, data: Path, config_dir: Path) -> Places:
        found: dict[str, str] = {}
        source = config.sources.primary
        if source.path and "://" not in source.path:
            found[str(Path(source.path).expanduser().resolve())] = "<corpus>"
            if Path(source.path).is_absolute():  # as written (a relative one names no one's folder)
                found[source.path] = "<corpus>"
        for folder, name in ((data, "<data>"), (config_dir, "<config>")):
            found.setdefault(str(folder.resolve()), name)
        for model in config.models.models:
            if model.base_url:
                found[model.base_url] = f"<base_url of {model.id}>"
        home = str(Path.home())
        if len(home) > 1:
            found.setdefault(home, "<home>")
        literals = sorted(((k, v) for k, v in found.items() if len(k) > 1), key=lambda kv: -len(kv[0]))
        return cls(literals)

    def _pattern(self) -> re.Pattern[str] | None:
        # Whole path names only: /data is not /data2 (a longer name goes on with a word character).
        if not self.literals:
            return None
        return re.compile("|".join(f"{re.escape(k)}(?![\\w-])" for k, _ in self.literals))

    def replace(self, text: str) -> str:
        pattern, names = self._pattern(), dict(self.literals)
        if pattern is not None:
            text = pattern.sub(lambda found: names[found.group(0)], text)
        return _HOMES.sub("<home>", text)

    def found(self, text: str) -> list[str]:
        """The placeholders whose text ``text`` still holds (what the leak check reports)."""
        pattern, names = self._pattern(), dict(self.literals)
        hits = sorted({names[m.group(0)] for m in pattern.finditer(text)}) if pattern is not None else []
        return hits + (["<home>"] if _HOMES.search(text) else [])
