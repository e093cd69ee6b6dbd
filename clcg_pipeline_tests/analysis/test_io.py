from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.analysis import read_scores


def test_scores_file_with_bad_rows_names_record_and_field(tmp_path: Path) -> None:
    row = {
        "model": "m",
        "language": "ka",
        "doc_id": "d1",
        "item_id": "i1",
        "rep": 0,
        "context_scope": "full_body",
        "level": "L3",
        "item_source": "llm",
        "status": "ok",
        "token_f1": 0.5,
        "accuracy": None,
    }
    good = pd.DataFrame([row, {**row, "item_id": "i2", "level": "L0", "token_f1": 0.0, "accuracy": 1.0}])
    good.to_parquet(tmp_path / "good.parquet")
    assert len(read_scores(str(tmp_path / "good.parquet"))) == 2

    pd.DataFrame([row, {**row, "item_id": "i2", "token_f1": None}]).to_parquet(tmp_path / "nan.parquet")
    with pytest.raises(ValueError, match=r"nan\.parquet: record .*item_id=i2.*field 'token_f1'"):
        read_scores(str(tmp_path / "nan.parquet"))

    pd.DataFrame([row, {**row, "item_id": "i3", "status": "oops"}]).to_parquet(tmp_path / "status.parquet")
    with pytest.raises(ValueError, match=r"record .*item_id=i3.*field 'status' is 'oops'"):
        read_scores(str(tmp_path / "status.parquet"))

    # An L0 row is scored by accuracy: a missing accuracy is the error there.
    l0 = {**row, "item_id": "i4", "level": "L0", "token_f1": 0.0, "accuracy": None}
    pd.DataFrame([row, l0]).to_parquet(tmp_path / "l0.parquet")
    with pytest.raises(ValueError, match=r"item_id=i4.*field 'accuracy'"):
        read_scores(str(tmp_path / "l0.parquet"))


def test_unwritable_output_names_the_file_not_its_temporary_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`clcg estimate --out <read-only folder>/e.json` said ".e.json.fd6jpey1.tmp: Read-only file system"."""
    import errno
    import tempfile

    from clcg_pipeline.analysis._io import write_json

    def read_only(*args: object, dir: str | None = None, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, "Read-only file system", f"{dir}/.e.json.x1y2.tmp")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with pytest.raises(OSError) as caught:
        write_json({"a": 1}, str(tmp_path / "e.json"))
    assert caught.value.filename == str(tmp_path / "e.json")


def test_the_results_document_is_written_as_encoded_with_the_same_bytes(tmp_path: Path) -> None:
    """Streamed to the file (issue 37: no whole-document string and bytes beside its values),
    with ``json.dumps``'s bytes, readable by others, and atomically: a failed encoding leaves
    the previous file and no temporary one."""
    import json
    import os

    from clcg_pipeline.analysis._io import _write_converted

    document = {"a": [1, 2.5, None, {"b": "\u00e9"}], "c": 1e-05, "d": {}}
    target = tmp_path / "out" / "study_results.json"
    _write_converted(document, str(target))
    want = (json.dumps(document, indent=2, sort_keys=False, allow_nan=False) + "\n").encode()
    assert target.read_bytes() == want and (os.stat(target).st_mode & 0o777) == 0o644
    _write_converted(document, target.as_uri())  # a file:// URL is a local file too
    assert target.read_bytes() == want
    with pytest.raises(ValueError, match="Out of range float"):
        _write_converted({"x": float("nan")}, str(target))
    assert target.read_bytes() == want and sorted(p.name for p in target.parent.iterdir()) == [target.name]
