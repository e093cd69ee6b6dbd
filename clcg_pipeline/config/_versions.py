"""Code versions of the study: package version, config and source files, by content.

``code_versions`` gives the version of the corpus assets and of the rest of the study
(``orchestration/_versions.py`` stamps them on the Dagster assets). Built from file
*contents*, never modification times, so a wheel install or a second checkout of the same code
and data agrees with the first. No Dagster here: ``clcg run`` compares them with the data
folder's last complete run before Dagster is imported (``storage/_snapshot.py``).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import tempfile
import threading
from pathlib import Path

from upath import UPath

from clcg_pipeline.config._models import ModelSpec, ProjectConfig, SourceSpec

_DEMO_PACKAGE = "clcg_pipeline.corpus"
_DEMO_FOLDER = "demo_data"
_CHUNK = 1 << 20
# Content hashes of local files, keyed by (path, size, mtime_ns): a file is read again only
# when it changes, in this process and (through the file in DAGSTER_HOME) in later ones.
_HASHES: dict[str, str] = {}
_USED: set[str] = set()  # what this process looked up: the persistent cache keeps only these
_HASHES_LOCK = threading.Lock()
_DIRTY = {"changed": False}
_CACHE_NAME = "clcg_source_hashes.json"


def _cache_file() -> Path | None:
    home = os.environ.get("DAGSTER_HOME")
    return Path(home) / _CACHE_NAME if home else None


def _load_persistent() -> None:
    cache = _cache_file()
    if cache is None or not cache.exists():
        return
    try:
        stored = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # a damaged cache only costs re-hashing
    if isinstance(stored, dict):
        _HASHES.update({str(k): str(v) for k, v in stored.items()})


def _save_persistent() -> None:
    cache = _cache_file()
    if cache is None or not cache.parent.exists() or not _DIRTY["changed"]:
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=f".{cache.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            # Entries of files that changed since are dropped, so the file does not grow forever.
            json.dump({key: _HASHES[key] for key in _USED if key in _HASHES}, handle)
        os.replace(tmp, cache)
        _DIRTY["changed"] = False
    except OSError:
        pass  # the cache is an optimisation; a read-only home must not fail a run


def file_digest(path: Path) -> str:
    """sha256 of a local file's bytes, cached by path, size and modification time."""
    stat = path.stat()
    key = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    with _HASHES_LOCK:
        if not _HASHES:
            _load_persistent()
        cached = _HASHES.get(key)
        _USED.add(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    value = digest.hexdigest()
    with _HASHES_LOCK:
        _HASHES[key] = value
        _DIRTY["changed"] = True
    return value


def _local_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if p.is_file())


def source_content_hash(source: SourceSpec) -> str:
    """A hash of the source's settings and every file it reads, by content.

    Remote sources (fsspec URLs) use the store's own content fingerprint (``ukey``: the ETag
    on S3), so nothing is downloaded to tell whether they changed.
    """
    # The path is left out: the same files in another checkout or mount are the same source.
    digest = hashlib.sha256(source.model_dump_json(exclude={"path"}).encode())
    if source.kind == "demo":
        folder = importlib.resources.files(_DEMO_PACKAGE) / _DEMO_FOLDER
        with importlib.resources.as_file(folder) as path:
            _update_local(digest, Path(path))
    elif source.path:
        _update_path(digest, source.path)
    with _HASHES_LOCK:
        _save_persistent()
    return digest.hexdigest()


def _update_path(digest: hashlib._Hash, location: str) -> None:
    if "://" in location and not location.startswith("file://"):
        root = UPath(location)
        fs = root.fs
        base = root.path
        files = sorted(fs.find(base)) if fs.isdir(base) else [base]
        for file in files:
            digest.update(f"{file[len(base) :]}={fs.ukey(file)}".encode())
    else:
        _update_local(digest, Path(UPath(location).path))


def long_document_source_hash(location: str) -> str:
    """Content hash of a long-document corpus (``study.granularity.source`` as a path)."""
    digest = hashlib.sha256(b"granularity.source")
    _update_path(digest, location)
    with _HASHES_LOCK:
        _save_persistent()
    return digest.hexdigest()


def _update_local(digest: hashlib._Hash, root: Path) -> None:
    if not root.exists():
        digest.update(b"<missing>")  # the load will fail and say so; the version just differs
        return
    for file in _local_files(root):
        name = file.relative_to(root) if file != root else Path(file.name)
        digest.update(f"{name.as_posix()}={file_digest(file)}".encode())


def _hash(*parts: str) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


MODEL_PREFIX = "model:"


def model_version_key(model_id: str) -> str:
    """The key of ``model_id``'s own version in ``code_versions``' result."""
    return f"{MODEL_PREFIX}{model_id}"


def _strings(value: object) -> set[str]:
    """Every text in a dumped settings tree, dict keys included."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {text for key, item in value.items() for text in (_strings(key) | _strings(item))}
    if isinstance(value, list | tuple):
        return {text for item in value for text in _strings(item)}
    return set()


def _own_models(config: ProjectConfig) -> list[ModelSpec]:
    """The evaluated models that nothing but their own partitions reads.

    An auxiliary model (a judge, a writer) is read by assets of every model, and so is an
    evaluated model the study settings name (as a judge, the item generator, a family override):
    those belong to what every asset depends on. Any text of the study settings equal to a model
    id counts as naming it, so a setting added later is covered without a list to keep.
    """
    named = _strings(config.study.model_dump(mode="json"))
    return [model for model in config.models.evaluated if model.id not in named]


def code_versions(config: ProjectConfig) -> dict[str, str]:
    """The code versions of the study's assets, by what they depend on.

    - ``corpus``: the corpus assets (source contents, the panel, the study settings);
    - ``inputs``: everything but the list of evaluated models (the corpus, the package, the
      auxiliary and study-named models, a long-document corpus): the study inputs, and the
      language x model family as an asset (what Dagster shows);
    - ``model:<id>``, one per evaluated model: ``inputs`` and that model's own settings, the
      version of its language x model partitions (what their records carry);
    - ``study``: all of it, every model included: the assets that read every model.

    So adding a model, or editing one, changes ``study`` and that model's version only.
    Built from the parsed config (not the files' bytes, so comments and key order do not
    count), the package version and the sources' contents.
    """
    from clcg_pipeline import __version__

    sources = [source_content_hash(source) for source in config.sources.sources]
    corpus = _hash(__version__, config.languages.model_dump_json(), config.study.model_dump_json(), *sources)
    # A long-document corpus is read by long_documents (a study asset), not the corpus assets: an
    # edited file must make it stale too. "assembled" reads the study's own corpus, already hashed.
    granularity_source = config.study.granularity.source
    extra = [] if granularity_source == "assembled" else [long_document_source_hash(granularity_source)]
    own = _own_models(config)
    own_ids = {model.id for model in own}
    # By id, not by position: a model added anywhere in models.yaml leaves the others' order alone.
    shared = sorted((m for m in config.models.models if m.id not in own_ids), key=lambda m: m.id)
    inputs = _hash(corpus, *(m.model_dump_json() for m in shared), *extra)
    versions = {
        "corpus": corpus,
        "inputs": inputs,
        "study": _hash(corpus, config.models.model_dump_json(), *extra),
    }
    evaluated = config.models.evaluated
    versions.update({model_version_key(m.id): _hash(inputs, m.model_dump_json()) for m in evaluated})
    return versions
