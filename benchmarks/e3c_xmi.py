"""E3C's original XMI files read by the XMI format, checked against the corpus's JSONL.

`../shared/data/e3c/xmi/{english,italian}/*.xml` are INCEpTION/WebAnno exports published without a
TypeSystem.xml (webapp.lib.formats.xmi infers one from each file); `*_layer1_train.jsonl`
holds the same documents' text and entities with code-point offsets. For every document the text
must be equal and the set of (type, begin, end) entities of the custom layers equal. Prints one
JSON object: documents, entities, mismatches, seconds and documents/s per language, the machine.
Nothing to do (exit 0) when the data is not there: the product never needs it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "e3c"


def check(folder: Path, jsonl: Path) -> dict:
    from webapp.lib.formats import ReadOptions, get_format
    from webapp.lib.problems import Problems

    gold = {}
    for line in jsonl.open(encoding="utf-8"):
        doc = json.loads(line)
        gold[doc["id"]] = (doc["text"], sorted((e["type"], e["begin"], e["end"]) for e in doc["entities"]))
    started = time.perf_counter()
    documents = entities = 0
    mismatches, problems = [], Problems()
    for item in get_format("xmi").read(folder, ReadOptions(), problems):
        documents += 1
        text, expected = gold.get(item.id, (None, None))
        found = sorted((s.label, s.start, s.end) for s in item.spans)
        entities += len(found)
        if text != item.text or found != expected:
            mismatches.append(item.id)
    seconds = time.perf_counter() - started
    return {
        "documents": documents,
        "in_jsonl": len(gold),
        "entities": entities,
        "mismatches": mismatches,
        "errors": problems.lines()[:5],
        "seconds": round(seconds, 2),
        "documents_per_s": round(documents / seconds, 1) if seconds else None,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    if not (args.data / "xmi").is_dir():
        print(f"E3C XMI files not found under {args.data}; nothing to do", file=sys.stderr)
        return 0
    from benchmarks.machine import describe

    result = {
        lang: check(args.data / "xmi" / lang, args.data / f"{lang}_layer1_train.jsonl")
        for lang in ("english", "italian")
    }
    print(json.dumps({"benchmark": "e3c-xmi", **result, "machine": describe()}, indent=2))
    return 1 if any(r["mismatches"] or r["errors"] or r["documents"] != r["in_jsonl"] for r in result.values()) else 0
