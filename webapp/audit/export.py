"""The audit log as CSV, streamed row by row (memory stays flat for any number of events), through
the app's one CSV writer (webapp.lib.csv_export): a failed login records a username, and the log
holds other text an attacker chose, so formula-like cells are neutralised there.
"""

import json

from webapp.lib import csv_export

COLUMNS = ["id", "created", "actor", "action", "object_type", "object_id", "ip", "details"]
CHUNK = 2000


def csv_lines(events):
    rows = (
        (
            event.pk,
            event.created.isoformat(),
            event.actor_name,
            event.action,
            event.object_type,
            event.object_id,
            event.ip or "",
            json.dumps(event.details, ensure_ascii=False, sort_keys=True),
        )
        for event in events.iterator(chunk_size=CHUNK)
    )
    return csv_export.csv_lines(COLUMNS, rows)
