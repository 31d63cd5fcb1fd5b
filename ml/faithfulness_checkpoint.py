"""A resumable faithfulness run: `python -m ml faithfulness --resume FILE`.

The checkpoint is JSONL. Line 1 is the run's header (model, methods, relevance and faithfulness
settings, the drawn pairs and a digest of their notes); a later run resumes it only with the same
header, otherwise it is refused with the fields that differ. Then, as they finish:
* {"maps": method, "pairs": [[note id, task], ...], "scores": [...], "offsets": [...]}: one
  note's maps of one method (one compute_relevance call over the note's drawn pairs, so the
  note's prompts still share their prefix; the group is the same in every run, hence the same maps);
* {"record": {...}, "forward_passes": p, "forward_calls": c}: one pair's faithfulness record
  (every method's curves and the random draws' mean: they share the pair's rows).
A line is appended with one write() on a file opened O_APPEND, then fsync'd, so a killed run
leaves whole lines and at most a partial last one, which the next run cuts off; it loses at most
the note (maps) or the pair (record) in progress. Floats are written with repr (JSON), which reads
back to the same float64, so a resumed run's JSON equals an uninterrupted one's (tests: a run
killed with SIGKILL). AttnLRP's maps come last (ml.relevance.methods.run_order); a piece that
resumes after them scores its pairs in a process lxt never patched, which changes no forward value
(measured: identical F, patched or not, on the tiny Llama, Qwen2 and Gemma3 models).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

VERSION = 1


class CheckpointMismatch(ValueError):
    """The checkpoint belongs to another run (its header differs)."""


@dataclass(frozen=True)
class StoredMap:
    """A map read back from a checkpoint: what ml.faithfulness.model_pairs needs of a result."""

    scores: np.ndarray
    offsets: np.ndarray


def notes_digest(notes: Sequence[str]) -> str:
    """sha256 of the drawn pairs' note texts, in order: a header field, never the text itself."""
    h = hashlib.sha256()
    for text in notes:
        h.update(text.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def _normal(value):
    """value as JSON reads it back (tuples become lists), to compare headers."""
    return json.loads(json.dumps(value))


class Checkpoint:
    def __init__(self, path: str | os.PathLike, header: Mapping):
        self.path = Path(path)
        self.header = _normal({"faithfulness_checkpoint": VERSION, **header})
        self.maps: dict[tuple[str, tuple[str, str]], StoredMap] = {}
        self.records: dict[tuple[str, str], tuple[dict, int, int]] = {}
        lines = self._read()
        if not lines:
            self._append(self.header)
            return
        stored = lines[0]
        if stored != self.header:
            differ = sorted(k for k in set(stored) | set(self.header) if stored.get(k) != self.header.get(k))
            raise CheckpointMismatch(f"{self.path} belongs to another run: {', '.join(differ)} differ")
        for line in lines[1:]:
            self._load(line)

    def _read(self) -> list[dict]:
        """The whole lines; a partial last line (a killed write) is cut off the file."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            with open(self.path, "r+b") as f:
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())
        out = []
        for number, raw in enumerate(data[:end].splitlines(), 1):
            try:
                out.append(json.loads(raw))
            except ValueError:
                raise ValueError(f"{self.path}, line {number}: not JSON") from None
        return out

    def _load(self, line: dict) -> None:
        if "maps" in line:
            for key, scores, offsets in zip(line["pairs"], line["scores"], line["offsets"]):
                self.maps[(line["maps"], tuple(key))] = StoredMap(
                    np.asarray(scores, dtype=np.float64), np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
                )
        elif "record" in line:
            record = line["record"]
            key = (record["note_id"], record["task"])
            self.records[key] = (record, int(line["forward_passes"]), int(line["forward_calls"]))
        else:
            raise ValueError(f"{self.path}: a line that is neither maps nor a record")

    def _append(self, obj: Mapping) -> None:
        data = (json.dumps(obj, allow_nan=True) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)

    def add_maps(self, method: str, keys: Sequence[tuple[str, str]], results: Sequence) -> None:
        """One note's maps of `method` (RelevanceResults or StoredMaps), as one line."""
        line = {
            "maps": method,
            "pairs": [list(k) for k in keys],
            "scores": [np.asarray(r.scores, dtype=np.float64).tolist() for r in results],
            "offsets": [np.asarray(r.offsets).tolist() for r in results],
        }
        self._append(line)
        self._load(_normal(line))

    def add_record(self, key: tuple[str, str], record: dict, passes: int, calls: int) -> None:
        line = {"record": record, "forward_passes": int(passes), "forward_calls": int(calls)}
        self._append(line)
        self._load(_normal(line))

    def result(self, keys: Sequence[tuple[str, str]], methods: Sequence[str], config):
        """The FaithfulnessResult of `keys` (every one scored), from the records alone."""
        from ml.faithfulness import FaithfulnessResult, summarise

        missing = [k for k in keys if tuple(k) not in self.records]
        if missing:
            raise ValueError(f"{len(missing)} pairs are not scored in {self.path}")
        held = [self.records[tuple(k)] for k in keys]
        records = [r for r, _, _ in held]
        summary = summarise(records, list(methods), config)
        return FaithfulnessResult(records, summary, sum(p for _, p, _ in held), sum(c for _, _, c in held))
