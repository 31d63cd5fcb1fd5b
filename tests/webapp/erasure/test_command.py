"""manage.py erase without --dry-run: the erasure runs in the command's process (or is queued
with --queue), prints its counts, and refuses what it cannot find in words."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.erasure.models import ErasureRequest

pytestmark = pytest.mark.django_db


def test_the_command_erases_notes_and_prints_the_receipts_counts(world):
    out = io.StringIO()
    call_command("erase", "--project", "erasure-study", "--corpus", "ward", "--note", "n3", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["status"] == "done" and report["tables"]["corpus.Note"] == 1 and report["rows"] > 1
    assert report["files"] == {"export folders": 1} and report["models trained on erased data"] == ["tiny-dsm"]
    assert not Note.objects.filter(external_id="n3").exists()
    receipt = AuditEvent.objects.get(action=AuditEvent.Action.ERASURE)
    assert receipt.actor_name.startswith("worker:") or receipt.actor_name.startswith("cli:")
    assert receipt.details["tables"] == report["tables"]


def test_queue_only_queues_and_an_unknown_corpus_is_refused(world):
    out = io.StringIO()
    call_command("erase", "--project", "erasure-study", "--whole-project", "--queue", stdout=out)
    assert ErasureRequest.objects.get().status == "queued" and "queued" in out.getvalue()
    assert Note.objects.filter(corpus=world.ward).count() == 3
    with pytest.raises(CommandError, match="No corpus named 'nowhere'"):
        call_command("erase", "--project", "erasure-study", "--corpus", "nowhere", "--whole-corpus", "--dry-run")
    with pytest.raises(CommandError, match="No project"):
        call_command("erase", "--project", "nope", "--whole-project", "--dry-run")
