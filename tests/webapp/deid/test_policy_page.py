"""A project's de-identification policy page (webapp.deid_ops.views.policy_page): its admins only;
each list one entry a line; each record pattern checked, the error naming it; keeping the mapping
refused without DEID_MAPPING_KEY; saved and audited with the fields changed and counts, never the
lists' words."""

import json

import pytest
from django.urls import reverse

from tests.projects import DEFAULT_SLUG, default_project
from webapp.audit.models import AuditEvent
from webapp.deid.models import DeidPolicy
from webapp.projects.models import Project

URL = reverse("deid:policy", args=[DEFAULT_SLUG])
VALID = {
    "mode": "tags",  # not the default (surrogates), so the audit row names it as changed
    "patient_field": "patient_id",
    "known_fields": "patient_name\nmrn\n\nmrn",
    "record_patterns": r"\bRIC-\d{6}\b",
    "allow_list": "Parkinson\nCrohn\nQuagliarella",
    "deny_list": "Reparto Zanfrini",
    "ner_model_dir": "",
}


def test_a_project_admin_sees_the_policy_and_the_keys_state(client_for, admin_user):
    page = client_for(admin_user).get(URL)
    assert page.status_code == 200
    body = page.content.decode()
    assert "Record and accession numbers" in body and "DEID_MAPPING_KEY</code> is not set" in body
    project_page = client_for(admin_user).get(reverse("projects:detail", args=[DEFAULT_SLUG]))
    assert URL in project_page.content.decode()


@pytest.mark.parametrize("role", ["researcher", "clinician"])
def test_other_roles_are_refused(client_for, request, role):
    user = request.getfixturevalue(role)
    assert client_for(user).get(URL).status_code == 403
    assert client_for(user).post(URL, VALID).status_code == 403
    assert not DeidPolicy.objects.exists()


def test_another_projects_admin_gets_a_404(client_for, admin_user):
    other = Project.objects.create(name="Elsewhere", slug="elsewhere")
    assert client_for(admin_user).get(reverse("deid:policy", args=[other.slug])).status_code == 404


def test_saving_keeps_each_line_once_and_audits_names_and_counts_never_words(client_for, admin_user):
    response = client_for(admin_user).post(URL, VALID)
    assert response.status_code == 302
    policy = DeidPolicy.objects.get(project=default_project())
    assert policy.mode == "tags" and policy.patient_field == "patient_id"
    assert policy.known_fields == ["patient_name", "mrn"]
    assert policy.record_patterns == [r"\bRIC-\d{6}\b"]
    assert policy.allow_list == ["Parkinson", "Crohn", "Quagliarella"]
    assert policy.deny_list == ["Reparto Zanfrini"] and policy.updated_by == admin_user
    event = AuditEvent.objects.get(action=AuditEvent.Action.DEID_POLICY)
    assert event.project_id == policy.project_id
    details = event.details
    assert set(details["changed"]) >= {"mode", "patient_field", "known_fields", "allow_list", "deny_list"}
    assert details["allow_list_count"] == 3 and details["deny_list_count"] == 1 and details["known_fields_count"] == 2
    written = json.dumps(details)
    for word in ("Parkinson", "Crohn", "Quagliarella", "Zanfrini", "RIC-", "patient_name"):
        assert word not in written


def test_saving_nothing_new_records_nothing(client_for, admin_user):
    client = client_for(admin_user)
    client.post(URL, VALID)
    client.post(URL, VALID)
    assert AuditEvent.objects.filter(action=AuditEvent.Action.DEID_POLICY).count() == 1


def test_a_bad_record_pattern_is_named_in_the_error(client_for, admin_user):
    response = client_for(admin_user).post(URL, {**VALID, "record_patterns": "\\bRIC-\\d{6}\\b\nCART-(\\d+\n\\d*"})
    assert response.status_code == 400
    body = response.content.decode()
    assert "Pattern 2 (&#x27;CART-(\\\\d+&#x27;) is not a regular expression" in body
    assert "Pattern 3 (&#x27;\\\\d*&#x27;) matches empty text" in body
    assert not DeidPolicy.objects.exists() and not AuditEvent.objects.filter(action="deid_policy").exists()


def test_a_metadata_key_with_odd_characters_is_refused(client_for, admin_user):
    response = client_for(admin_user).post(URL, {**VALID, "known_fields": "patient name", "patient_field": "a__b"})
    assert response.status_code == 400
    form = response.context["form"]
    assert "known_fields" in form.errors and "patient_field" in form.errors


def test_keeping_the_mapping_needs_the_key(client_for, admin_user, settings):
    settings.DEID_MAPPING_KEY = ""
    response = client_for(admin_user).post(URL, {**VALID, "keep_mapping": "on"})
    assert response.status_code == 400
    assert "DEID_MAPPING_KEY is not set" in response.context["form"].errors["keep_mapping"][0]
    assert not DeidPolicy.objects.exists()


def test_with_the_key_the_mapping_is_kept(client_for, admin_user, mapping_key):
    assert client_for(admin_user).post(URL, {**VALID, "keep_mapping": "on"}).status_code == 302
    assert DeidPolicy.objects.get().keep_mapping
    assert AuditEvent.objects.get(action="deid_policy").details["keep_mapping"] is True


def test_a_ner_folder_is_an_absolute_path(client_for, admin_user):
    response = client_for(admin_user).post(URL, {**VALID, "ner_model_dir": "models/it"})
    assert response.status_code == 400 and "ner_model_dir" in response.context["form"].errors
