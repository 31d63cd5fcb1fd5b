"""Every API route that names an object, GET and POST, with a researcher's token of project A
pointed at project B's objects: 404 (or 405, the same for every id), and nothing of B changes."""

from django.urls import URLPattern, URLResolver, get_resolver, reverse

from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.pipeline.models import RelevanceJob
from webapp.training.models import TrainingRun


def _api_routes(patterns=None, prefix=""):
    for p in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(p, URLResolver):
            yield from _api_routes(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern) and prefix.startswith("api/") and "<" in str(p.pattern) and p.name:
            if ":" in str(p.pattern):  # a page (the webhooks page), not the API: see test_pages
                continue
            yield str(p.pattern), p.name


def _state(other):
    return [
        sorted(map(repr, model.objects.filter(pk=other[key]).values()))
        for model, key in (
            (RelevanceJob, "job_id"),
            (DatasetVersion, "dataset_id"),
            (DatasetExport, "export_id"),
            (TrainingRun, "run_id"),
        )
    ]


def test_no_api_route_answers_for_another_projects_object(client, researcher, own, other, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    routes = sorted(set(_api_routes()))
    assert len(routes) >= 20, routes  # every object route is here
    before = _state(other)
    answered = {}
    for route, name in routes:
        keys = [part.split(">", 1)[0] for part in route.split("<")[1:]]
        url = reverse(f"api:{name}", kwargs={key: other[key] for key in keys}) + "?fmt=jsonl"
        for method in ("GET", "POST"):
            response = getattr(client, method.lower())(url, headers=bearer(secret))
            if response.status_code not in (404, 405):
                answered[(method, route)] = response.status_code
            body = b"".join(response.streaming_content) if response.streaming else response.content
            assert b"Zebra" not in body
    assert answered == {}
    assert _state(other) == before


def test_no_list_names_another_projects_objects(client, researcher, own, other, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    for url in ("/api/projects", "/api/corpora", "/api/imports", "/api/jobs", "/api/datasets"):
        response = client.get(url, headers=bearer(secret))
        assert response.status_code == 200, url
        assert b"Zebra" not in response.content and b"zebra" not in response.content, url
    for url in ("/api/training-runs", "/api/evaluations"):
        assert client.get(url, headers=bearer(secret)).json()["items"] == []
