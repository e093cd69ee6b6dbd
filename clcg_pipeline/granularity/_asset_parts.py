"""What the granularity asset modules share: the group, the disabled status, two small frames."""

from collections.abc import Sequence

import dagster as dg
import pandas as pd

GROUP = "granularity"
DISABLED = "skipped: study.granularity.enabled is false"


def md(frame: pd.DataFrame) -> dg.MetadataValue:
    return dg.MetadataValue.md(frame.to_markdown(index=False) if len(frame) else "none")


def empty(columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
