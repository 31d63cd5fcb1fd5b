"""JSON Lines: examples.jsonl, one row a line (a JSON object of the columns of SCHEMA), UTF-8."""

from __future__ import annotations

import json
from collections.abc import Iterator

from webapp.datasets.formats import DatasetFormat


def steps(batches, sink, counter, describe) -> Iterator[None]:
    for rows in batches:
        sink.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8"))
        counter.written(rows)
        yield


FORMAT = DatasetFormat("jsonl", "JSONL", "examples.jsonl", steps)
