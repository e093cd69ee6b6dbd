"""Tests of clcg_pipeline.release."""
