"""What the CodiEsp scripts share: reading the corpus files, writing notes for the importer,
timing stages."""

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def read_jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def english_rows(path: Path) -> Iterator[tuple[dict, str]]:
    """(row, English text) of the rows of a CodiEsp file that have `text_en_mt`."""
    for row in read_jsonl(path):
        text = (row.get("text_en_mt") or "").strip()
        if text:
            yield row, text


def note_line(row: dict, text: str, source: str) -> str:
    """One line of importer JSONL."""
    return json.dumps({"id": row["id"], "text": text, "metadata": {"source": source, "text": "text_en_mt"}}) + "\n"


def write_notes(source: Path, n: int, out: Path, label: str = "CodiEsp background") -> list[str]:
    """The first n notes of `source` with an English text, as importer JSONL; returns their ids."""
    ids = []
    with out.open("w", encoding="utf-8") as dst:
        for row, text in english_rows(source):
            if len(ids) == n:
                break
            dst.write(note_line(row, text, label))
            ids.append(row["id"])
    return ids


class Timer:
    """timer("stage") is a context manager that records the stage's seconds in timer.stages
    and says on stderr when each stage starts and ends."""

    def __init__(self):
        self.stages = {}

    @contextlib.contextmanager
    def __call__(self, name):
        print(f"[{time.strftime('%H:%M:%S')}] {name} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = round(time.perf_counter() - started, 2)
            print(f"[{time.strftime('%H:%M:%S')}] {name}: {self.stages[name]} s", file=sys.stderr, flush=True)
