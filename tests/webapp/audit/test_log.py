"""webapp.audit.log: who is named as the actor, and what a refused import keeps."""

import getpass
import sys

import pytest

from webapp.audit.log import reason_categories, reason_category, record, record_refused_import
from webapp.audit.models import AuditEvent
from webapp.lib.problems import Problem

OS_USER = getpass.getuser()


def test_a_user_is_named_and_linked(clinician):
    event = record(clinician, AuditEvent.Action.REVIEW_DECISION, clinician, op="accept")
    assert (event.actor, event.actor_name, event.details) == (clinician, "clara", {"op": "accept"})
    assert (event.object_type, event.object_id, event.ip) == ("auth.User", str(clinician.pk), None)


def test_a_command_is_recorded_as_the_operating_system_user_with_its_name(db, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/srv/app/manage.py", "import_notes", "notes.jsonl", "--corpus", "ward"])
    event = record(None, AuditEvent.Action.LOAD_CATALOG, created=3)
    assert event.actor is None and event.actor_name == f"cli:{OS_USER}"
    assert event.details == {"command": "import_notes", "created": 3}


def test_a_label_given_by_a_command_is_kept_beside_the_operating_system_user(db, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["manage.py", "export_dataset", "7"])
    event = record("command:rita", AuditEvent.Action.EXPORT, rows=2)
    assert event.actor_name == f"cli:{OS_USER}"
    assert event.details == {"command": "export_dataset", "as": "command:rita", "rows": 2}


@pytest.mark.parametrize("program", ["/venv/bin/celery", "/venv/lib/python3.11/site-packages/celery/__main__.py"])
def test_a_worker_without_a_user_is_named_as_a_worker(db, monkeypatch, program):
    monkeypatch.setattr(sys, "argv", [program, "-A", "workers", "worker"])
    event = record(None, AuditEvent.Action.LAUNCH_JOB)
    assert event.actor_name == f"worker:{OS_USER}" and event.details == {}


def test_an_unknown_operating_system_user_is_named_by_uid(db, monkeypatch):
    def no_login_name():
        raise OSError("No username set in the environment")

    monkeypatch.setattr(getpass, "getuser", no_login_name)
    monkeypatch.setattr(sys, "argv", ["manage.py", "setup_roles"])
    assert record(None, AuditEvent.Action.LOAD_CATALOG).actor_name.startswith("cli:uid")


def test_an_anonymous_visitor_is_not_taken_for_the_command_line(db):
    from django.contrib.auth.models import AnonymousUser

    event = record(AnonymousUser(), AuditEvent.Action.PERMISSION_DENIED, ip="10.1.2.3")
    assert (event.actor, event.actor_name, event.ip, event.details) == (None, "anonymous", "10.1.2.3", {})


@pytest.mark.parametrize(
    "message,category",
    [
        (
            "note 'n7' already exists with different text (content hash differs); use --update to replace it",
            "note … already exists with different text",
        ),
        ("duplicate id 'Rossi Mario' (first on line 3)", "duplicate id …"),
        ("invalid JSON: Expecting value at column 26", "invalid JSON"),
        ("not valid UTF-8 (byte 3 of the line, byte 40 of the file)", "not valid UTF-8"),
        ("unknown field(s) patient_name, mrn (allowed: id, text, metadata)", "unknown field"),
        ("field 'text' contains a NUL character at offset 12", "field … contains a NUL character at"),
        ('note "it\'s" has 3 annotation(s), so its text cannot change', "note … has N annotation"),
    ],
)
def test_a_reason_category_keeps_no_value_from_the_file(message, category):
    assert reason_category(message) == category


def test_reason_categories_are_the_first_three_distinct_ones():
    reasons = [Problem("notes.jsonl", i, f"duplicate id 'n{i}' (first on line {i - 1})") for i in range(2, 7)]
    reasons += [
        Problem("notes.jsonl", 8, "field 'text' is empty"),
        Problem("notes.jsonl", 9, "invalid JSON: x"),
        Problem("notes.jsonl", None, "the file holds no notes"),
    ]
    assert reason_categories(reasons) == ["duplicate id …", "field … is empty", "invalid JSON"]


def test_a_refused_import_keeps_counts_and_categories_only(researcher):
    event = record_refused_import(
        researcher,
        "ward",
        "notes",
        57,
        [
            Problem("notes.jsonl", 4, "duplicate id 'Bianchi' (first on line 2)"),
        ],
    )
    assert event.action == AuditEvent.Action.IMPORT_REFUSED and event.actor == researcher
    assert event.details == {"corpus": "ward", "kind": "notes", "problems": 57, "reasons": ["duplicate id …"]}
    assert "Bianchi" not in str(event.details)


def test_outside_a_request_a_row_keeps_no_address(researcher):
    from webapp.audit.log import record

    assert record(researcher, AuditEvent.Action.CANCEL_JOB).ip is None


def test_the_middleware_gives_rows_the_request_s_address_and_forgets_it_after(researcher, rf):
    from webapp.audit.log import record
    from webapp.audit.request_context import RequestAddressMiddleware, current_address

    seen = []
    middleware = RequestAddressMiddleware(lambda request: seen.append(record(researcher, AuditEvent.Action.CANCEL_JOB)))
    middleware(rf.post("/", REMOTE_ADDR="198.51.100.7"))
    assert seen[0].ip == "198.51.100.7" and current_address() is None
    assert record(researcher, AuditEvent.Action.CANCEL_JOB, ip="203.0.113.1").ip == "203.0.113.1"  # given wins
