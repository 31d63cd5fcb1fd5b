"""An erasure on SQLite (the embedded default): a patient's notes and then the whole project,
every table counted before and after, as on PostgreSQL (tests/webapp/erasure)."""

import pytest
from django.db import connection

from tests.webapp.erasure.helpers import ADDED_BY_THE_ERASURE, changes, erase_here, erased_by_table
from tests.webapp.erasure.world import make_world
from webapp.erasure.models import ErasureRequest

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]
Scope = ErasureRequest.Scope


def test_a_patient_then_the_whole_project_are_erased_on_sqlite(admin_user, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    world = make_world(admin_user, data_dir=tmp_path)
    assert search_entries() == 4
    erasure, before, after = erase_here(
        world.project, Scope.PATIENT, corpus=world.ward, patient_key="patient_id", patients=["P1"], actor=admin_user
    )
    marks = {
        "erasure.DatasetWithdrawal": 1,
        "erasure.TrainedOnErasedData": 1,
        "erasure.TrainedOnErasedData_erasures": 1,
    }
    assert changes(before, after) == {**erased_by_table(erasure), **ADDED_BY_THE_ERASURE, **marks}
    assert erasure.erased["corpus.Note"] == 2 and erasure.erased["files: export folders"] == 1

    erasure, before, after = erase_here(world.project, Scope.PROJECT, actor=admin_user)
    assert changes(before, after) == {
        **erased_by_table(erasure),
        **ADDED_BY_THE_ERASURE,
        "erasure.TrainedOnErasedData_erasures": 1,
    }
    assert after["corpus.Note"] == after["corpus.Corpus"] == 0
    assert before["projects.Project"] - after["projects.Project"] == 1
    assert search_entries() == 0  # the notes' full-text index (FTS5) forgot them too


def search_entries() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM corpus_note_fts_docsize")  # the index's own rows, not the content table
        return cursor.fetchone()[0]
