"""The main pages load in real Chromium under the Content-Security-Policy with no violation.

A script injected before any page script (through the driver, so the policy does not apply to it)
records every `securitypolicyviolation` event; the console is read for "Content Security Policy"
errors too. The pages are the ones with the most moving parts: htmx polling and fragments, the
review page's preview, uPlot's training charts, the server-drawn SVG histograms and interval
charts that replaced inline style attributes, and the API's Swagger UI.

With DSM_SCREENSHOTS=<folder> each page is also saved as a PNG there, to compare by eye.
"""

import os
from pathlib import Path

import pytest

from tests.projects import default_project

pytestmark = pytest.mark.django_db(transaction=True)

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline") +
                              " at " + e.sourceFile + ":" + e.lineNumber);
});
"""


@pytest.fixture
def watched(page):
    """(page, console errors about the policy) with the violation recorder in every document."""
    page.context.add_init_script(RECORD_VIOLATIONS)
    console = []
    page.on(
        "console", lambda message: console.append(message.text) if "Content Security Policy" in message.text else None
    )
    return page, console


def violations(page) -> list[str]:
    return page.evaluate("window.__cspViolations")


@pytest.fixture
def site(researcher):
    """One of each main page's objects, with what makes their scripts and charts run."""
    from django.utils import timezone

    from tests.webapp.evaluation.factories import finished, group
    from tests.webapp.pipeline.factories import spec as job_spec
    from tests.webapp.review.fabricate import TEXT, add_map, word_span
    from webapp.corpus.models import Annotation, Corpus, Note, Task
    from webapp.datasets import building
    from webapp.datasets.models import DatasetVersion
    from webapp.pipeline import jobs, planning
    from webapp.pipeline.models import ModelVersion, PeakProfile
    from webapp.training import runs
    from webapp.training.models import RunMetric

    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en", deidentified=True)
    note = Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)
    heart = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    pacemaker = Task.objects.create(
        slug="presence-of-pacemaker", description="presence of pacemaker", options=["y", "n"]
    )
    base = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    dsm = ModelVersion.objects.create(name="dsm-model", family="llama", path="dsm-model", parent=base)
    # the default profile (an evaluation needs one) if a transactional test flushed the migrations' one
    sharp = PeakProfile.objects.create(
        name="sharp",
        kernel_size=1,
        sigma=1.0,
        lower=0.2,
        upper=0.4,
        is_default=not PeakProfile.objects.filter(is_default=True).exists(),
    )
    add_map(note, heart, base, {"130": 0.9, "tachycardic": 0.6, "Pacemaker": 0.45})
    add_map(note, heart, dsm, {"130": 1.0, "tachycardic": 0.9})
    add_map(note, pacemaker, base, {"Pacemaker": 1.0, "2019": 0.9})
    Annotation.objects.create(
        note=note, task=heart, label="y", annotator_name="gold", evidence=[list(word_span(TEXT, "130"))]
    )

    job = jobs.launch(job_spec(corpus, base, tasks=[heart]), actor=researcher, enqueue=False)
    planning.plan_now(job)
    dataset = DatasetVersion.objects.create(name="ds", version=1, corpus=corpus, model_version=base, profile=sharp)
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    run = runs.launch(
        runs.RunSpec(kind="dsm", model_version=base, dataset=dataset, config={"train": {"warmup_ratio": 0.0}}),
        enqueue=False,
    )
    RunMetric.objects.bulk_create(
        [RunMetric(run=run, step=s, loss=2.0 / s, lr=1e-4 * (1 - s / 20), epoch=s / 10) for s in range(1, 11)]
    )
    run.status, run.finished = "done", timezone.now()
    run.save(update_fields=["status", "finished"])
    winner = group("attnlrp", "span", 0.71, 0.66, 0.76)
    evaluation = finished(
        corpus,
        base,
        [group("attention", "next", 0.58, 0.54, 0.62), winner],
        choice={k: winner[k] for k in ("method", "explain", "template", "config_key")},
    )
    review = (
        f"/review/{corpus.pk}/notes/{note.pk}/?task={heart.pk}&model={base.pk}&method=attnlrp&template=en"
        f"&profile={sharp.pk}"
    )
    # (name, url, a selector that shows the page's scripts and fragments have done their work)
    return [
        ("login", "/login/", "#id_username"),
        ("home", "/", "h1"),
        ("corpus", f"/corpora/{corpus.pk}/", "h1"),
        ("note", f"/corpora/{corpus.pk}/notes/{note.pk}/", "#note-text"),
        ("review-note", review, "#preview-share"),
        (
            "review-compare",
            f"/review/{corpus.pk}/notes/{note.pk}/compare/?task={heart.pk}&a={base.pk}&b={dsm.pk}",
            "#mean-change",
        ),
        ("job", f"/jobs/{job.pk}/", "#job-progress"),
        ("dataset", f"/datasets/{dataset.pk}/", ".histogram .bar"),
        ("training-run", f"/training/{run.pk}/", "#chart-loss canvas"),
        ("evaluation", f"/evaluations/{evaluation.pk}/", ".intervals .track"),
        ("admin", "/admin/", "#content"),
        # Swagger UI: its scripts from ninja's vendored static files, the schema fetched by them
        ("api-docs", "/api/docs", ".swagger-ui .opblock"),
    ]


def test_the_main_pages_load_with_no_policy_violation(watched, login, admin_user, site):
    page, console = watched
    login(admin_user)
    shots = os.environ.get("DSM_SCREENSHOTS")
    for name, url, ready in site:
        response = page.goto(url)
        assert response.status == 200, name
        assert "script-src 'self'" in response.headers["content-security-policy"], name
        page.wait_for_selector(ready, state="attached")
        page.wait_for_load_state("networkidle")
        assert violations(page) == [], name
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(shots) / f"{name}.png"), full_page=True)
    assert console == []
    page.goto("/")  # what htmx read from templates/base.html's <meta name="htmx-config">
    assert page.evaluate("() => [htmx.config.includeIndicatorStyles, htmx.config.allowEval]") == [False, False]


def test_the_recorder_sees_what_the_policy_blocks(watched, login, admin_user):
    """The control for the test above: an inline script and an inline style are refused and reported."""
    page, _ = watched
    login(admin_user)
    page.evaluate("""() => {
        const script = document.createElement("script");
        script.textContent = "window.__inlineRan = true;";
        document.body.append(script);
        document.body.setAttribute("style", "background: red");
    }""")
    page.wait_for_function("() => window.__cspViolations.length >= 2")
    assert page.evaluate("window.__inlineRan === undefined")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgb(255, 0, 0)"
    directives = " ".join(violations(page))
    assert "script-src" in directives and "style-src" in directives
