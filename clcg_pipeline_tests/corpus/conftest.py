from __future__ import annotations

from pathlib import Path

import pytest

from clcg_pipeline.config import LanguagesConfig, load_config

FIXTURES = Path(__file__).parent / "fixtures"
CONFIG_DIR = Path(__file__).resolve().parents[2] / "assets_config"


@pytest.fixture(scope="session")
def languages() -> LanguagesConfig:
    return load_config(CONFIG_DIR).languages


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
