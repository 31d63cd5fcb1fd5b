"""What the review answers keep between requests (issue 41, item 5; webapp.review.caching), and
that a change shows at once: the guideline a task's reviewers read, whether a round of the map
exists (a decision outside every round reads no round row), and every task's specificity of a
note computed once for all its tasks."""

from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.projects import default_project
from webapp.corpus.tasks import write_project_guideline
from webapp.review import caching, noteview, selection
from webapp.review.models import PeakDecision, RoundClaim

from .fabricate import add_map, query
from .test_rounds import new_round
from .test_views_note import post, url


def _starting(queries, prefix: str) -> int:
    return sum(q["sql"].startswith(prefix) for q in queries.captured_queries)


def _reads(queries, table: str) -> int:
    return sum(f'FROM "{table}"' in q["sql"] for q in queries)


def test_a_new_guideline_version_shows_and_is_recorded_at_once(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    first = write_project_guideline(tasks["heart"], default_project(), "Only the current rate.")
    content = client.get(url(note), query(tasks["heart"], base, sharp)).content.decode()
    assert f'<input type="hidden" name="guideline" value="{first.version}">' in content
    with CaptureQueriesContext(connection) as queries:  # kept: the page reads no guideline row now
        client.get(url(note), query(tasks["heart"], base, sharp))
    assert _reads(queries.captured_queries, "corpus_taskguideline") == 0
    second = write_project_guideline(tasks["heart"], default_project(), "The rate at admission.")
    content = client.get(url(note), query(tasks["heart"], base, sharp)).content.decode()
    assert f'<input type="hidden" name="guideline" value="{second.version}">' in content
    assert "The rate at admission." in content
    post(client, note, tasks, base, sharp)  # no version on the form: the one read now
    assert PeakDecision.objects.get().guideline_version == second.version


def test_a_decision_outside_every_round_reads_no_round_row_and_a_new_round_counts_at_once(
    client, clinician, note, corpus, tasks, base, sharp, maps
):
    client.force_login(clinician)
    post(client, note, tasks, base, sharp, word="130")  # the "no round" answer is kept now
    with CaptureQueriesContext(connection) as queries:
        assert post(client, note, tasks, base, sharp, word="tachycardic").status_code == 200
    assert _reads(queries.captured_queries, "review_roundpair") == 0
    assert _reads(queries.captured_queries, "review_reviewround") == 0
    PeakDecision.objects.all().delete()
    rnd = new_round(corpus, tasks, base, sharp, [clinician], k=1)
    assert post(client, note, tasks, base, sharp, word="130").status_code == 200
    claim = RoundClaim.objects.get(round=rnd, reviewer=clinician)  # the decision took the pair's claim
    assert claim.pair.note_id == note.pk


def test_every_tasks_specificity_of_a_note_is_found_once_and_is_what_one_task_alone_says(
    client, clinician, note, tasks, base, sharp, maps
):
    """The second task's page reads no map of the note for its specificity; each task's figures
    are those the one-task computation gives; a recomputed map of another task is a new entry."""
    cache.clear()  # a test database made again has the same ids and texts: an earlier run's entries would hit
    client.force_login(clinician)
    for task in (tasks["heart"], tasks["pacemaker"]):
        sel = selection.for_note(note, query(task, base, sharp))
        _, spans, _ = noteview.stored_peaks(note, sel, arrays=False)
        arrays = noteview.map_arrays(note, sel)
        alone = noteview.specificity(note, sel, arrays[0], arrays[1], spans)
        together = noteview.note_specificities(note, sel)[task.pk]
        assert together == alone and together is not None
    client.get(url(note), query(tasks["heart"], base, sharp))  # every task's specificity, kept
    with CaptureQueriesContext(connection) as kept:
        page = client.get(url(note), query(tasks["pacemaker"], base, sharp))
    assert page.context["panel"].specificity is not None
    sel = selection.for_note(note, query(tasks["pacemaker"], base, sharp))
    cache.delete(caching.specificity_key(note, sel, caching.fingerprint(note, sel)))
    with CaptureQueriesContext(connection) as found:  # another window of the panel: its base is built again
        page = client.get(url(note), query(tasks["pacemaker"], base, sharp, peak=1))
    assert page.context["panel"].specificity is not None
    every_map = 'SELECT "pipeline_relevancemap"."task_id" AS "task_id", "pipeline_relevancemap"."data"'
    assert [_starting(q, every_map) for q in (kept, found)] == [0, 1]  # the note's maps: read only when not kept
    sel = selection.for_note(note, query(tasks["pacemaker"], base, sharp))
    before = caching.specificity_key(note, sel, caching.fingerprint(note, sel))
    add_map(note, tasks["heart"], base, {"Pacemaker": 1.0, "2019": 0.5})  # recomputed: the same peaks now
    assert caching.specificity_key(note, sel, caching.fingerprint(note, sel)) != before
    content = client.get(url(note), query(tasks["pacemaker"], base, sharp)).content.decode()
    assert "These peaks are the same for every task of this note" in content


def test_the_peak_rows_carry_the_selection_in_every_form(client, clinician, note, tasks, base, sharp, maps):
    """The selection's hidden fields are written once and repeated in every row's form."""
    client.force_login(clinician)
    page = client.get(url(note), query(tasks["heart"], base, sharp, k=1))
    content = page.content.decode()
    forms = content.count('class="decide-form"')
    assert forms == len(page.context["panel"].peaks) >= 2
    assert content.count(f'<input type="hidden" name="task" value="{tasks["heart"].pk}">') >= forms
    assert content.count('<input type="hidden" name="k" value="1">') >= forms
