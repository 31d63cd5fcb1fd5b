"""The audit log as CSV, streamed row by row (memory stays flat for any number of events).

Cells that a spreadsheet would read as a formula (=, +, -, @, tab, carriage return first) get a
leading apostrophe: a failed login records whatever username was typed, so the log holds text an
attacker chose.
"""

import csv
import json

COLUMNS = ["id", "created", "actor", "action", "object_type", "object_id", "ip", "details"]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CHUNK = 2000


class _Line:
    """A file-like object whose write() returns the line written (for csv.writer)."""

    def write(self, value):
        return value


def csv_lines(events):
    writer = csv.writer(_Line())
    yield writer.writerow(COLUMNS)
    for event in events.iterator(chunk_size=CHUNK):
        yield writer.writerow(
            [
                _cell(value)
                for value in (
                    event.pk,
                    event.created.isoformat(),
                    event.actor_name,
                    event.action,
                    event.object_type,
                    event.object_id,
                    event.ip or "",
                    json.dumps(event.details, ensure_ascii=False, sort_keys=True),
                )
            ]
        )


def _cell(value):
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
