"""Export of a round's work: every judgement of its reviewers and the result of each peak.

JSONL: one object per peak of the round, in pair order:
  {"round", "order" (which pairs the round's queue served first: webapp.review.orders),
   "note_id", "external_id", "task", "start", "end",
   "judgements": [{"reviewer", "decision", "kept", "adjusted_start", "adjusted_end", "comment",
                   "decided_at", "guideline_version", "active_ms"}, ...],
   "result": {"kept", "by", "curator", "decided_at", "comment"}}
`result.by` is "curator" (final), "majority" (no curator's decision: kept unless rejects are at
least half, a tie rejects) or "none" (nobody decided the peak yet); `kept` is then null.
CSV: one row per judgement (a peak with none: one row with empty judgement columns), the peak's
result repeated on each row. Offsets are character offsets of the note's text; no note text is
exported (the corpus export has it), so the file can travel with ids only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from webapp.lib import csv_export
from webapp.review.adjudication import RoundPeak, round_peaks

CSV_COLUMNS = (
    "round",
    "order",
    "note_id",
    "external_id",
    "task",
    "start",
    "end",
    "reviewer",
    "decision",
    "kept",
    "adjusted_start",
    "adjusted_end",
    "decided_at",
    "guideline_version",
    "active_ms",
    "result_kept",
    "result_by",
    "curator",
    "adjudicated_at",
)


def _time(value) -> str | None:
    return value.isoformat() if value is not None else None


def peak_record(rnd, peak: RoundPeak) -> dict:
    kept, by = peak.result
    adj = peak.adjudication
    return {
        "round": rnd.name,
        "order": rnd.order,  # what the queue served first (webapp.review.orders)
        "note_id": peak.pair.note_id,
        "external_id": peak.pair.note.external_id,
        "task": peak.pair.task.slug,
        "start": peak.start,
        "end": peak.end,
        "judgements": [
            {
                "reviewer": d.reviewer.get_username(),
                "decision": d.decision,
                "kept": d.kept,
                "adjusted_start": d.adjusted_start,
                "adjusted_end": d.adjusted_end,
                "comment": d.comment,
                "decided_at": _time(d.updated),
                "guideline_version": d.guideline_version,
                "active_ms": d.active_ms,
            }
            for d in peak.decisions
        ],
        "result": {
            "kept": kept,
            "by": by,
            "curator": adj.curator.get_username() if adj else None,
            "decided_at": _time(adj.updated) if adj else None,
            "comment": adj.comment if adj else None,
        },
    }


def jsonl_lines(rnd) -> Iterator[str]:
    for peak in round_peaks(rnd):
        yield json.dumps(peak_record(rnd, peak), ensure_ascii=False) + "\n"


def csv_rows(rnd) -> Iterator[list]:
    for peak in round_peaks(rnd):
        record = peak_record(rnd, peak)
        result = record["result"]
        head = [record[name] for name in ("round", "order", "note_id", "external_id", "task", "start", "end")]
        tail = [result["kept"], result["by"], result["curator"], result["decided_at"]]
        for j in record["judgements"] or [None]:
            middle = [
                None if j is None else j[name]
                for name in (
                    "reviewer",
                    "decision",
                    "kept",
                    "adjusted_start",
                    "adjusted_end",
                    "decided_at",
                    "guideline_version",
                    "active_ms",
                )
            ]
            yield head + middle + tail


def csv_lines(rnd) -> Iterator[str]:
    return csv_export.csv_lines(CSV_COLUMNS, csv_rows(rnd))
