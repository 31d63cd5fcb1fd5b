"""Presidio, imported without the transformers library it does not need here.

`presidio_analyzer` imports its optional Hugging Face engine on import, and that imports
`transformers` (and through it the whole of torch's model zoo): 10-15 s of a process's start
for code the de-identifier never runs (its NLP engine is spacy.blank, its NER ml.deid.ner).
When transformers is not loaded yet, it is hidden for the time of Presidio's import only, so
Presidio takes it for not installed (its Hugging Face parts then say so if called); it is
importable again right after, and ml.deid.ner imports it itself when a transformers NER model
is configured. When it is already loaded (a worker that trains), nothing is hidden.

The other modules of ml.deid import Presidio's names from here, so this import comes first.
"""

from __future__ import annotations

import sys

if "presidio_analyzer" not in sys.modules and "transformers" not in sys.modules:
    sys.modules["transformers"] = None  # type: ignore[assignment]  # "not installed", for now
    try:
        import presidio_analyzer  # noqa: F401
    finally:
        if "transformers" in sys.modules and sys.modules["transformers"] is None:
            del sys.modules["transformers"]

from presidio_analyzer import (  # noqa: E402
    AnalyzerEngine,
    EntityRecognizer,
    Pattern,
    PatternRecognizer,
    RecognizerRegistry,
    RecognizerResult,
)
from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer  # noqa: E402
from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine  # noqa: E402

__all__ = [
    "AnalyzerEngine",
    "ContextAwareEnhancer",
    "EntityRecognizer",
    "NlpArtifacts",
    "Pattern",
    "PatternRecognizer",
    "RecognizerRegistry",
    "RecognizerResult",
    "SpacyNlpEngine",
]
