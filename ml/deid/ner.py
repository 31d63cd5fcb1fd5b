"""The optional named-entity model a hospital installs: a local folder, never downloaded.

`load_person_ner(path)` returns a function text -> [(start, end, score)] of the PERSON/PER
entities. A folder holding a spaCy pipeline (meta.json or config.cfg) is loaded with
`spacy.load(path)`; one holding a transformers token-classification model (config.json) with a
`transformers` pipeline from that folder only (local files, hub offline). spaCy and transformers
are imported only here and only then, so the detector without a model imports neither.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

PERSON_LABELS = frozenset({"PERSON", "PER", "PERS", "B-PER", "I-PER", "NAME", "PATIENT", "DOCTOR"})
SPACY_SCORE = 0.8  # spaCy gives no score per entity
MAX_CHUNK_CHARS = 1000  # a transformers model reads a long note in pieces


class NerModelError(ValueError):
    """The configured NER folder is missing or holds no model we can load."""


def load_person_ner(path: str | os.PathLike) -> Callable[[str], list[tuple[int, int, float]]]:
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise NerModelError(
            f"NER model folder {str(path)!r} does not exist (DeidConfig.ner_model_dir): install the "
            "hospital's spaCy or transformers model there, or leave ner_model_dir empty; models are "
            "never downloaded"
        )
    if (folder / "meta.json").is_file() or (folder / "config.cfg").is_file():
        return _spacy_ner(folder)
    if (folder / "config.json").is_file():
        return _transformers_ner(folder)
    raise NerModelError(
        f"NER model folder {str(path)!r} holds neither a spaCy pipeline (meta.json, config.cfg) nor a "
        "transformers model (config.json)"
    )


def _spacy_ner(folder: Path):
    import spacy

    nlp = spacy.load(folder)

    def run(text: str) -> list[tuple[int, int, float]]:
        doc = nlp(text)
        return [(e.start_char, e.end_char, SPACY_SCORE) for e in doc.ents if e.label_.upper() in PERSON_LABELS]

    return run


def _chunks(text: str, size: int = MAX_CHUNK_CHARS):
    """[start, end) pieces of at most `size` characters, cut at a blank where there is one."""
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = text.rfind(" ", start + size // 2, end)
            end = cut if cut > start else end
        yield start, end
        start = end


def _transformers_ner(folder: Path):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForTokenClassification.from_pretrained(folder, local_files_only=True)
    pipe = pipeline("token-classification", model=model, tokenizer=tokenizer, aggregation_strategy="simple")

    def run(text: str) -> list[tuple[int, int, float]]:
        out = []
        for start, end in _chunks(text):
            for ent in pipe(text[start:end]):
                label = str(ent.get("entity_group") or ent.get("entity") or "").upper()
                if label in PERSON_LABELS:
                    out.append((start + int(ent["start"]), start + int(ent["end"]), float(ent["score"])))
        return out

    return run
