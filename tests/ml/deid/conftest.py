"""Detectors shared by the ml.deid tests: building one compiles every recognizer (tens of ms)."""

from __future__ import annotations

import pytest

from ml.deid.detector import Detector
from ml.deid.types import DeidConfig


@pytest.fixture(scope="session")
def detectors():
    """One plain Detector per language, built on first use."""
    cache: dict[str, Detector] = {}

    def get(language: str) -> Detector:
        if language not in cache:
            cache[language] = Detector(DeidConfig(language=language))
        return cache[language]

    return get


def found(detector, text, known=None):
    """[(type, text)] of a detector's findings."""
    return [(f.type, text[f.start : f.end]) for f in detector.find(text, known=known)]
