"""SIMULATED annotations for the bundled demo (see README.md): never real human judgments."""

from clcg_pipeline.validation.human.demo_annotations._simulate import (
    SIMULATED_PREFIX,
    simulate_annotations,
    simulated_inbox_files,
)

__all__ = ["SIMULATED_PREFIX", "simulate_annotations", "simulated_inbox_files"]
