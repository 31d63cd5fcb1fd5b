"""Fixtures of the de-identification flow's tests: a project policy (surrogates, a patient field,
known fields), notes that hold identifiers, a mapping key, and the check that no original
identifier is anywhere in the database."""

import json

import pytest
from django.apps import apps
from django.db import models
from django.db.models import TextField
from django.db.models.functions import Cast

from tests.projects import default_project
from tests.workers.conftest import start_worker, worker_env  # noqa: F401 - a real worker's fixtures (test_worker)
from webapp.corpus.models import Task
from webapp.deid.models import DeidPolicy
from webapp.deid.policy import forget_detectors

# One patient's identifiers, each of which the de-identifier finds (ml.deid): the name from the
# metadata (two variants), the record number from the metadata, a phone number, a date, a titled
# name. Names outside the surrogates' lexicons, so no surrogate can be one of them.
NAME, NAME_VARIANT, MRN = "Ottone Zanfrini", "ZANFRINI Ottone", "RIC-123456"
PHONE, DATE, DOCTOR = "333 1234567", "3 marzo 2024", "Quagliarella"
PATIENT = "PZ-0042"  # the patient field's value: never in the text, hashed in the metadata
FIRST = (
    f"Paziente {NAME}, cartella {MRN}, ricoverato il {DATE}. Tel {PHONE}. "
    f"{NAME_VARIANT} lamenta tachicardia, FC 130. Visto dal Dott. {DOCTOR}. Morbo di Parkinson escluso."
)
SECOND = f"Controllo di {NAME}: FC 80, nessuna tachicardia. Richiamare al {PHONE}."
IDENTIFIERS = (NAME, NAME_VARIANT, MRN, PHONE, DATE, DOCTOR, PATIENT, "Zanfrini", "Ottone")
METADATA = {"patient_id": PATIENT, "patient_name": NAME, "mrn": MRN, "ward": "cardiologia"}


@pytest.fixture(autouse=True)
def fresh_detectors():
    """Each test builds its detectors afresh (a policy's `updated` may repeat across tests)."""
    forget_detectors()
    yield
    forget_detectors()


@pytest.fixture
def project(db):
    return default_project()


@pytest.fixture
def policy(project):
    return DeidPolicy.objects.create(
        project=project,
        mode=DeidPolicy.Mode.SURROGATES,
        patient_field="patient_id",
        known_fields=["patient_name", "mrn"],
    )


@pytest.fixture
def mapping_key(settings):
    from cryptography.fernet import Fernet

    settings.DEID_MAPPING_KEY = Fernet.generate_key().decode()
    return settings.DEID_MAPPING_KEY


@pytest.fixture
def tachycardia(db):
    return Task.objects.create(slug="tachy", description="tachicardia", options=["y", "n"])


def jsonl(rows) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def note_rows():
    return [
        {"id": "n1", "text": FIRST, "metadata": METADATA},
        {"id": "n2", "text": SECOND, "metadata": METADATA},
    ]


def places_holding(value: str) -> list[str]:
    """Every table.column of the database whose text (a char, text or JSON column, as text) holds
    `value`, case-insensitively: where an identifier would have been kept."""
    found = []
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if not isinstance(field, models.CharField | models.TextField | models.JSONField):
                continue
            rows = model._default_manager.annotate(_as_text=Cast(field.name, TextField()))
            if rows.filter(_as_text__icontains=value).exists():
                found.append(f"{model._meta.label}.{field.name}")
    return found


def assert_no_identifier_anywhere(values=IDENTIFIERS):
    left = {value: where for value in values if (where := places_holding(value))}
    assert not left, left
