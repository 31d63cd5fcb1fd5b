"""The OpenAPI schema is valid OpenAPI (openapi-spec-validator) and names the bearer scheme; the
docs page loads its Swagger UI from our own static files, never a CDN; both need an identity (a
signed-in session or a token), like every page."""

from django.test import Client
from openapi_spec_validator import validate


def test_the_schema_is_valid_openapi_with_bearer_auth(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    schema = Client().get("/api/openapi.json", headers=bearer(secret)).json()
    validate(schema)  # raises, naming the path, on any departure from the OpenAPI specification
    assert schema["openapi"].startswith("3.")
    assert schema["components"]["securitySchemes"]["BearerToken"]["scheme"] == "bearer"
    for path in ("/api/jobs", "/api/datasets", "/api/evaluations", "/api/training-runs", "/api/imports"):
        assert "post" in schema["paths"][path], path  # every kind of work can be launched
    assert "/api/evaluations/{evaluation_id}/resume" in schema["paths"]


def test_the_docs_page_uses_vendored_assets(client, researcher):
    client.force_login(researcher)
    html = client.get("/api/docs").content.decode()
    assert "swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower() and "https://" not in html


def test_the_docs_and_schema_need_an_identity(db):
    anonymous = Client()
    docs = anonymous.get("/api/docs")
    assert docs.status_code == 302 and docs["Location"].startswith("/login/")
    assert anonymous.get("/api/openapi.json").status_code == 401
    refused = anonymous.get("/api/openapi.json", headers={"Authorization": "Bearer dsm_not-a-token"})
    assert refused.status_code == 401
