"""The comparison page and the review report page."""

from django.urls import reverse

from webapp.lifecycle import units
from webapp.review import decisions, report_store
from webapp.review.decisions import PeakContext
from webapp.review.models import ReportSnapshot

from .fabricate import TEXT, query, word_span


def test_the_comparison_shows_both_maps_and_their_difference(
    client, clinician, note, tasks, base, dsm, sharp, maps, gold
):
    client.force_login(clinician)
    content = client.get(
        reverse("review:compare", args=[note.corpus_id, note.pk]), query(tasks["heart"], base, sharp)
    ).content.decode()
    assert "base-model vs dsm-model" in content
    assert 'id="first-map"' in content and 'id="second-map"' in content and 'id="diff-text"' in content
    assert "hatched red" in content and "+11.8%" in content


def test_the_summary_fragment_gives_the_relative_change(client, researcher, note, tasks, base, dsm, sharp, maps, gold):
    client.force_login(researcher)
    content = client.get(
        reverse("review:compare_summary", args=[note.corpus_id]),
        {**query(tasks["heart"], base, sharp), "a": base.pk, "b": dsm.pk},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert "<html" not in content and 'id="mean-change">+11.8%' in content and "+37.2%" in content


def test_the_report_lists_tasks_with_decisions(client, researcher, clinician, note, tasks, base, maps):
    a, b = word_span(TEXT, "130")
    decisions.decide(
        PeakContext(note, tasks["heart"], base, "attnlrp", "en"),
        clinician,
        start=a,
        end=b,
        decision="reject",
        expected_version=0,
    )
    client.force_login(researcher)
    assert "being computed" in client.get(reverse("review:report"), {"corpus": note.corpus_id}).content.decode()
    report_store.run(units.claim(ReportSnapshot, ReportSnapshot.objects.get().pk))  # workers.reports' work
    content = client.get(reverse("review:report"), {"corpus": note.corpus_id}).content.decode()
    assert "heart rate" in content and "no shared peak" in content
    assert 'id="agreement"' in content and "All tasks" in content
    assert "No item was judged by two or more reviewers" in content
    response = client.get(reverse("review:report"), {"corpus": note.corpus_id, "format": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines[0].startswith("task,peaks,") and lines[1].startswith("heart-rate,1,0,1,1,0,1,")
    assert lines[-1].startswith("(all tasks),")


def test_with_maps_of_one_model_only_the_page_says_which_model_lacks_them(
    client, researcher, note, tasks, base, dsm, sharp, gold
):
    from .fabricate import add_map

    add_map(note, tasks["heart"], base, {"130": 0.9})  # dsm-model exists but has no map of this note
    client.force_login(researcher)
    content = client.get(
        reverse("review:compare", args=[note.corpus_id, note.pk]), query(tasks["heart"], base, sharp)
    ).content.decode()
    assert "vs ?" not in content and " minus " not in content and "No map of this model version" not in content
    assert "Only base-model has relevance maps for this note" in content
    assert "dsm-model (trained from base-model) has none yet" in content
    assert f'href="{reverse("pipeline:job_launch")}">Launch a relevance job</a>' in content
    assert "model dsm-model, method attnlrp, template en" in content
    assert 'id="first-map"' in content and 'id="second-map"' not in content


def test_a_clinician_is_told_who_can_compute_the_missing_maps(client, clinician, note, tasks, base, sharp):
    from .fabricate import add_map

    add_map(note, tasks["heart"], base, {"130": 0.9})  # the only model version there is
    client.force_login(clinician)
    content = client.get(
        reverse("review:compare", args=[note.corpus_id, note.pk]), query(tasks["heart"], base, sharp)
    ).content.decode()
    assert "Only base-model has relevance maps" in content and "No other model version has maps for it" in content
    assert "A researcher computes them with a relevance job" in content and "Launch a relevance job" not in content


def test_a_chosen_model_without_a_map_for_the_task_is_named(client, researcher, note, tasks, base, dsm, sharp, maps):
    client.force_login(researcher)
    content = client.get(
        reverse("review:compare", args=[note.corpus_id, note.pk]),
        {**query(tasks["pacemaker"], base, sharp), "a": base.pk, "b": dsm.pk},
    ).content.decode()
    assert "dsm-model has no map for this note and task (attnlrp, template en)" in content
    assert "The difference needs maps of both model versions for this note and task: dsm-model has none" in content
    assert " minus " not in content and "Launch a relevance job" in content


def test_the_summary_gives_the_change_per_task_with_its_ci(client, researcher, corpus, tasks, base, dsm, sharp):
    from webapp.corpus.models import Annotation, Note

    from .fabricate import add_map

    for i, (task, word) in enumerate([(tasks["heart"], "130")] * 12 + [(tasks["pacemaker"], "Pacemaker")] * 3):
        note = Note.objects.create(corpus=corpus, external_id=f"s{i}", text=TEXT)
        add_map(note, task, base, {word: 0.5})
        add_map(note, task, dsm, {word: 0.75})  # +50% on every pair
        Annotation.objects.create(
            note=note, task=task, label="y", annotator_name="gold", evidence=[list(word_span(TEXT, word))]
        )
    client.force_login(researcher)
    content = client.get(
        reverse("review:compare_summary", args=[corpus.pk]),
        {**query(tasks["heart"], base, sharp), "a": base.pk, "b": dsm.pk},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    # the same change on every pair: every resample gives it, so the CI is that point and p the smallest, 2 / 1001
    assert 'id="mean-change">+50.0%</strong>' in content
    assert 'id="mean-change-ci">95% CI 50.0% to 50.0%</span>, p = 0.002' in content
    heart = content.split('<th scope="row">heart rate</th>')[1].split("</tr>")[0]
    assert ">12<" in heart and "+50.0%" in heart and "50.0% to 50.0%" in heart and "0.002" in heart
    pacemaker = content.split('<th scope="row">presence of pacemaker</th>')[1].split("</tr>")[0]
    assert ">3<" in pacemaker and "+50.0%" in pacemaker and "too few pairs for a CI" in pacemaker


def test_one_pair_gets_its_change_but_no_ci(client, researcher, note, tasks, base, dsm, sharp, maps, gold):
    client.force_login(researcher)
    content = client.get(
        reverse("review:compare_summary", args=[note.corpus_id]),
        {**query(tasks["heart"], base, sharp), "a": base.pk, "b": dsm.pk},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert 'id="mean-change">+11.8%' in content and "(too few pairs for a CI)" in content and "p = " not in content


def test_the_summary_says_which_model_has_no_maps_on_the_annotated_pairs(
    client, researcher, note, tasks, base, dsm, sharp, gold
):
    from .fabricate import add_map

    add_map(note, tasks["heart"], base, {"130": 0.9})
    client.force_login(researcher)
    content = client.get(
        reverse("review:compare_summary", args=[note.corpus_id]),
        {**query(tasks["heart"], base, sharp), "a": base.pk, "b": dsm.pk},
    ).content.decode()
    assert "<h1>base-model vs dsm-model over ward</h1>" in content
    assert (
        "dsm-model has no relevance maps (attnlrp, template en) for the 1 annotated note-task pair with gold "
        "evidence; base-model has maps for 1."
    ) in content
    assert "Launch a relevance job</a> to compute them: corpus ward, model dsm-model" in content


def test_the_report_of_another_projects_corpus_or_model_is_not_found_and_its_csv_is_audited(
    client, researcher, clinician, note, tasks, base, maps
):
    """A corpus or model id the reader may not see is a 404, as in a URL (it used to drop the
    filter and show every visible corpus); the CSV leaves the server, so it is audited."""
    from webapp.audit.models import AuditEvent
    from webapp.corpus.models import Corpus
    from webapp.projects.models import Project

    elsewhere = Project.objects.create(slug="elsewhere", name="Elsewhere")
    hidden = Corpus.objects.create(project=elsewhere, name="hidden", language="en")
    client.force_login(researcher)
    assert client.get(reverse("review:report"), {"corpus": hidden.pk}).status_code == 404
    assert client.get(reverse("review:report"), {"corpus": "nonsense"}).status_code == 404
    assert client.get(reverse("review:report"), {"model": 10**9}).status_code == 404
    assert client.get(reverse("review:report"), {"corpus": hidden.pk, "format": "csv"}).status_code == 404
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT).exists()

    decisions.decide(
        PeakContext(note, tasks["heart"], base, "attnlrp", "en"),
        clinician,
        start=word_span(TEXT, "130")[0],
        end=word_span(TEXT, "130")[1],
        decision="reject",
        expected_version=0,
    )
    client.get(reverse("review:report"), {"corpus": note.corpus_id})
    report_store.run(units.claim(ReportSnapshot, ReportSnapshot.objects.get().pk))
    response = client.get(reverse("review:report"), {"corpus": note.corpus_id, "format": "csv"})
    assert response.status_code == 200
    event = AuditEvent.objects.get(action=AuditEvent.Action.EXPORT)
    assert event.actor == researcher and event.object_id == str(note.corpus_id)
    assert event.details == {"kind": "review_report", "format": "csv"}
