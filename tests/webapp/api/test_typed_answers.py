"""Every operation of /api/openapi.json declares what its success answers (a typed schema, or a
file of a named type), so a client generated from it gets every field; the answers a project's
member reads are exactly the fields their schemas declare; refusals declare the error schema."""

import pytest
from django.test import Client

from webapp.deid.models import DeidJob
from webapp.pipeline.models import MapImportJob, ModelVersion


@pytest.fixture
def schema(researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    return Client().get("/api/openapi.json", headers=bearer(secret)).json()


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _operations(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield f"{method.upper()} {path}", operation


def test_every_operation_declares_a_non_empty_schema_for_its_success(schema):
    operations = dict(_operations(schema))
    assert len(operations) >= 40
    for name, operation in operations.items():
        success = [code for code in operation["responses"] if str(code).startswith("2")]
        assert len(success) == 1, name
        content = operation["responses"][success[0]].get("content")
        assert content, f"{name} declares no answer"
        (media_type, body), *_ = content.items()
        answer = _resolve(schema, body["schema"])
        if media_type == "application/json":
            if answer.get("type") == "array":
                answer = _resolve(schema, answer["items"])
            assert answer.get("properties"), f"{name} answers an object of no declared fields"
        else:  # a download: a zip, CSV or JSONL file
            assert answer == {"type": "string", "format": "binary"}, name


def test_every_refusal_declares_the_error_schema(schema):
    for name, operation in _operations(schema):
        for code, response in operation["responses"].items():
            if str(code).startswith("4"):
                error = _resolve(schema, response["content"]["application/json"]["schema"])
                assert "detail" in error["properties"], f"{name} {code}"


def test_each_answer_has_exactly_its_schemas_fields(client, other, make_token, bearer, schema):
    """Project B's owner reads one object of every kind: each answer's keys are its schema's."""
    DeidJob.objects.create(project=other["project"], action="scan", source_id=other["corpus_id"])
    model = ModelVersion.objects.get(name="shared base")
    MapImportJob.objects.create(corpus_id=other["corpus_id"], model_version=model, problems=[[2, "unknown note"]])
    _, secret = make_token(other["owner"], [other["project"]])
    headers = bearer(secret)
    paths = {
        "/api/projects": "/api/projects",
        "/api/corpora/{corpus_id}": f"/api/corpora/{other['corpus_id']}",
        "/api/corpora/{corpus_id}/notes": f"/api/corpora/{other['corpus_id']}/notes",
        "/api/corpora/{corpus_id}/notes/{note_id}": f"/api/corpora/{other['corpus_id']}/notes/{other['note_id']}",
        "/api/corpora/{corpus_id}/notes/{note_id}/maps": (
            f"/api/corpora/{other['corpus_id']}/notes/{other['note_id']}/maps"
        ),
        "/api/corpora/{corpus_id}/scans/latest": f"/api/corpora/{other['corpus_id']}/scans/latest",
        "/api/jobs/{job_id}": f"/api/jobs/{other['job_id']}",
        "/api/imports": "/api/imports",
        "/api/datasets/{dataset_id}": f"/api/datasets/{other['dataset_id']}",
        "/api/datasets/{dataset_id}/exports/{export_id}": (
            f"/api/datasets/{other['dataset_id']}/exports/{other['export_id']}"
        ),
        "/api/training-runs/{run_id}": f"/api/training-runs/{other['run_id']}",
        "/api/evaluations/{evaluation_id}": f"/api/evaluations/{other['evaluation_id']}",
        "/api/deid-jobs": "/api/deid-jobs",
        "/api/map-imports": "/api/map-imports",
    }
    for template, url in paths.items():
        answer = client.get(url, headers=headers)
        assert answer.status_code == 200, url
        body = answer.json()
        declared = schema["paths"][template]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        declared = _resolve(schema, declared)
        if declared.get("type") == "array":
            body, declared = body[0], _resolve(schema, declared["items"])
        if "items" in declared["properties"]:  # a page: its rows too
            assert set(body) == set(declared["properties"]), url
            body, declared = body["items"][0], _resolve(schema, declared["properties"]["items"]["items"])
        assert set(body) == set(declared["properties"]), url
