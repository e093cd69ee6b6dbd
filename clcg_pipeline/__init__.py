"""clcg-pipeline: the Cross-Lingual Comprehension Gap study as a Dagster asset graph."""

__version__ = "0.1.0"
