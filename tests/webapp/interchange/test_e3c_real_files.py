"""E3C's real XMI files (INCEpTION/WebAnno exports published without a TypeSystem.xml), read by
the product's XMI reader, against the corpus's own JSONL of the same documents: for every
document the text is the same and so is the number of entities of each layer (CLINENTITY,
EVENT, BODYPART, ACTOR, TIMEX3, RML), and their code-point offsets (the files count UTF-16 code
units). The files are real public data in `../shared/data/e3c`, not part of the repository: the
test is skipped when they are not there (a fresh machine, CI). All 36 + 36 documents are read;
this takes about 2.5 s. benchmarks/e3c_xmi.py times the same reading."""

import json
from collections import Counter
from pathlib import Path

import pytest

from webapp.lib.formats import ReadOptions, get_format
from webapp.lib.problems import Problems

E3C = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "e3c"
LAYERS = {"CLINENTITY", "EVENT", "BODYPART", "ACTOR", "TIMEX3", "RML"}


@pytest.mark.parametrize("language", ["english", "italian"])
def test_e3c_xmi_files_hold_the_entities_of_e3cs_jsonl(language):
    folder, jsonl = E3C / "xmi" / language, E3C / f"{language}_layer1_train.jsonl"
    if not (folder.is_dir() and jsonl.is_file()):
        pytest.skip(f"E3C's files are not here ({folder} and {jsonl.name}): real data, never in the repository")
    expected = {}
    for line in jsonl.open(encoding="utf-8"):
        doc = json.loads(line)
        expected[doc["id"]] = doc
    problems = Problems()
    read = list(get_format("xmi").read(folder, ReadOptions(), problems))
    assert problems.lines() == []
    assert sorted(doc.id for doc in read) == sorted(expected)  # one document per file, none missing
    assert len(read) >= 30  # 36 in E3C's layer-1 train split
    entities = 0
    for doc in read:
        gold = expected[doc.id]
        counts = Counter(span.label for span in doc.spans)
        assert counts == Counter(e["type"] for e in gold["entities"]), doc.id
        assert set(counts) <= LAYERS, doc.id
        assert doc.text == gold["text"], doc.id
        found = sorted((span.label, span.start, span.end) for span in doc.spans)
        assert found == sorted((e["type"], e["begin"], e["end"]) for e in gold["entities"]), doc.id
        entities += len(found)
    assert entities > 1000  # e.g. EN100017 alone has 196
