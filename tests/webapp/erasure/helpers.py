"""Running an erasure in the test's process, and comparing every table before and after."""

from tests.webapp.erasure.world import every_table
from webapp.erasure import erasing


def erase_here(project, scope, **target):
    """Request an erasure (not sent to a queue) and run it to its end in this process.
    Returns (erasure, every table's rows before, after)."""
    before = every_table()
    erasure = erasing.request(project, scope, send=False, **target)
    status = erasing.run(erasing.claim(erasure.pk, worker="test"))
    assert status == "done", erasure.error
    erasure.refresh_from_db()
    return erasure, before, every_table()


def changes(before: dict, after: dict) -> dict:
    """{table: rows after - rows before} of every table whose count changed."""
    return {table: after[table] - before[table] for table in before if after[table] != before[table]}


def erased_by_table(erasure) -> dict:
    """The request's counts as negative changes, tables only (files left out)."""
    return {table: -rows for table, rows in erasure.erased.items() if not table.startswith("files: ")}


# What an erasure itself adds: the request, its two audit entries, its marks.
ADDED_BY_THE_ERASURE = {"erasure.ErasureRequest": 1, "audit.AuditEvent": 2}
