"""The review loop's pages run a bounded number of queries, however many notes, maps, peaks and
decisions there are: the queue redirect, the note page, the htmx panel and a decision's htmx
answer. Each bound is the count measured when peaks are stored (webapp.review.peakstore), and
each test grows the data between two requests to show the count does not grow with it."""

import pytest
from django.urls import reverse

from webapp.corpus.models import Note
from webapp.review import peakstore, queue
from webapp.review.selection import Selection

from .fabricate import TEXT, add_map, query, word_span

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "note-panel"}
# With the review menus kept by the process (webapp.review.catalog; each test warms them first):
# The user's roles are kept in the cache (webapp.projects.roles) until a membership changes: no query.
QUEUE_QUERIES = 4  # session, user, corpus, the window (with whether its peaks are stored and open)
# The guideline and whether a round of the map exists are kept too (webapp.review.caching), the
# profile menu comes from the catalog.
NOTE_QUERIES = 9  # session, user, note, the note's maps (selection), gold, neighbours, maps' fingerprint, ...
DECIDE_QUERIES = 18  # a decision answered with the whole panel: the note page's, the decision's transaction, ...
# (whether the pair has decisions is asked first: one query more when it has, none built when not)


@pytest.fixture
def ward(corpus, tasks, base, note, maps):
    """The fixture note plus `more(n)` notes with maps of both tasks."""

    def more(n):
        for i in range(n):
            extra = Note.objects.create(corpus=corpus, external_id=f"more-{Note.objects.count()}-{i}", text=TEXT)
            add_map(extra, tasks["heart"], base, {"130": 0.9, "febrile": 0.9})
            add_map(extra, tasks["pacemaker"], base, {"Pacemaker": 0.9})

    return more


def store_all(corpus, base, sharp):
    sel = Selection(None, base, "attnlrp", "en", sharp, sharp.params)
    peakstore.ensure(queue.selection_maps(corpus, sel), sharp.params)


def test_the_queue_redirect_runs_a_bounded_number_of_queries(
    client, clinician, corpus, base, sharp, ward, django_assert_max_num_queries
):
    client.force_login(clinician)
    url = reverse("review:queue", args=[corpus.pk])
    client.get(url, {"model": base.pk, "profile": sharp.pk})  # warms the process's review menus
    for n in (2, 20):
        ward(n)
        store_all(corpus, base, sharp)
        with django_assert_max_num_queries(QUEUE_QUERIES):
            assert client.get(url, {"model": base.pk, "profile": sharp.pk}).status_code == 302


def test_the_note_page_and_its_htmx_panel_run_a_bounded_number_of_queries(
    client, clinician, note, corpus, tasks, base, sharp, ward, django_assert_max_num_queries
):
    client.force_login(clinician)
    url = reverse("review:note", args=[note.corpus_id, note.pk])
    client.get(url, query(tasks["heart"], base, sharp))  # stores the map's peaks (first use)
    for n in (2, 20):
        ward(n)
        with django_assert_max_num_queries(NOTE_QUERIES):
            assert client.get(url, query(tasks["heart"], base, sharp)).status_code == 200
        with django_assert_max_num_queries(NOTE_QUERIES):  # the panel
            assert client.get(url, query(tasks["heart"], base, sharp), **HX).status_code == 200


def test_a_decisions_htmx_answer_runs_a_bounded_number_of_queries(
    client, clinician, admin_user, note, corpus, tasks, base, sharp, ward, django_assert_max_num_queries
):
    client.force_login(clinician)
    url = reverse("review:decide", args=[note.corpus_id, note.pk])
    client.get(reverse("review:note", args=[note.corpus_id, note.pk]), query(tasks["heart"], base, sharp))
    ward(20)
    store_all(corpus, base, sharp)  # the page may have come from the panel cache (a test database made again)
    for word in ("130", "tachycardic"):
        a, b = word_span(TEXT, word)
        data = {**query(tasks["heart"], base, sharp), "k": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4}
        data |= {"start": a, "end": b, "decision": "accept", "version": 0}
        with django_assert_max_num_queries(DECIDE_QUERIES):
            response = client.post(url, {**data, "window": 0, "guideline": 0}, **HX)
        assert response.status_code == 200 and "You accepted the peak" in response.content.decode()


DECIDE_ROW_QUERIES = 13  # session, user, note, peaks, the transaction (6), audit, the decisions on the
# note, whether a round of the map exists (the first time; then kept, as the guideline): not the panel's
# map, gold, neighbours and selection


def test_a_decisions_row_answer_runs_fewer_queries_than_the_panel(
    client, clinician, note, corpus, tasks, base, sharp, ward, django_assert_max_num_queries
):
    client.force_login(clinician)
    url = reverse("review:decide", args=[note.corpus_id, note.pk])
    page = client.get(reverse("review:note", args=[note.corpus_id, note.pk]), query(tasks["heart"], base, sharp))
    assert page.status_code == 200
    ward(20)
    store_all(corpus, base, sharp)  # the page may have come from the panel cache (a test database made again)
    for word in ("130", "tachycardic"):
        a, b = word_span(TEXT, word)
        index = [(p.start, p.end) for p in page.context["panel"].peaks].index((a, b))
        data = {**query(tasks["heart"], base, sharp), "k": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4}
        data |= {"start": a, "end": b, "decision": "accept", "version": 0}
        with django_assert_max_num_queries(DECIDE_ROW_QUERIES):
            response = client.post(
                url, {**data, "window": 0, "guideline": 0}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"peak-item-{index}"
            )
        assert response.status_code == 200 and f'id="peak-item-{index}"' in response.content.decode()
