"""The note panel's decision-free part is kept in Django's cache (webapp.review.caching) and
never shown stale: a decision, another threshold, a recomputed map, new gold evidence or a
changed text shows at once; a kept panel costs fewer queries than a built one."""

import re

import numpy as np
import pytest
from django.core.cache import cache
from django.urls import reverse

from webapp.corpus.models import Annotation
from webapp.review import caching, decisions, noteview
from webapp.review.decisions import PeakContext

from .fabricate import TEXT, add_map, query, scores_for, tokens, word_span


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def page(client, note, tasks, base, sharp, **extra):
    response = client.get(
        reverse("review:note", args=[note.corpus_id, note.pk]), query(tasks["heart"], base, sharp, **extra)
    )
    assert response.status_code == 200
    return response


def marks(response) -> str:
    return response.context["panel"].html


def test_a_second_view_of_the_panel_is_read_from_the_cache(
    client, clinician, note, tasks, base, sharp, maps, monkeypatch
):
    built = []
    real = noteview.panel_base
    monkeypatch.setattr(noteview, "panel_base", lambda *a, **k: built.append(1) or real(*a, **k))
    client.force_login(clinician)
    first = page(client, note, tasks, base, sharp)
    assert caching.PLACEHOLDER.format(0) not in marks(first)
    second = page(client, note, tasks, base, sharp)
    assert built == [1]  # built once, then read from the cache
    assert marks(second) == marks(first)
    assert [(p.start, p.end) for p in second.context["panel"].peaks] == [
        (p.start, p.end) for p in first.context["panel"].peaks
    ]


def test_a_decision_shows_at_once_in_the_marks_and_the_rows(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    before = page(client, note, tasks, base, sharp)
    assert 'class="peak mine-accept' not in marks(before)
    a, b = word_span(TEXT, "130")
    ctx = PeakContext(note, tasks["heart"], base, "attnlrp", "en", maps["heart"].config_key)
    decisions.decide(ctx, clinician, start=a, end=b, decision="accept", expected_version=0)
    after = page(client, note, tasks, base, sharp)
    assert 'class="peak mine-accept' in marks(after)
    row = next(p for p in after.context["panel"].peaks if (p.start, p.end) == (a, b))
    assert row.mine is not None and row.css == "mine-accept"
    assert after.context["panel"].decided == 1


def test_an_adjusted_decision_selects_its_bounds_in_the_kept_choices(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    page(client, note, tasks, base, sharp)
    a, b = word_span(TEXT, "tachycardic")
    wider = word_span(TEXT, "bpm")[0]
    ctx = PeakContext(note, tasks["heart"], base, "attnlrp", "en", maps["heart"].config_key)
    decisions.decide(
        ctx, clinician, start=a, end=b, decision="adjust", expected_version=0, adjusted_start=wider, adjusted_end=b
    )
    row = next(p for p in page(client, note, tasks, base, sharp).context["panel"].peaks if (p.start, p.end) == (a, b))
    assert [o for o, _, selected in row.start_options if selected] == [wider]


def test_another_threshold_a_recomputed_map_and_new_gold_each_show_at_once(
    client, clinician, note, tasks, base, sharp, maps
):
    client.force_login(clinician)
    spans = lambda r: [(p.start, p.end) for p in r.context["panel"].peaks]  # noqa: E731
    shown = spans(page(client, note, tasks, base, sharp))
    assert word_span(TEXT, "130") in shown and word_span(TEXT, "tachycardic") in shown
    # moved sliders: upper 0.85 keeps "130" (0.9) only
    assert spans(page(client, note, tasks, base, sharp, k=1, sigma=1.0, lower=0.2, upper=0.85)) == [
        word_span(TEXT, "130")
    ]
    # the map recomputed in place (same row, new scores): "febrile" only
    add_map(note, tasks["heart"], base, {"febrile": 0.9})
    assert spans(page(client, note, tasks, base, sharp)) == [word_span(TEXT, "febrile")]
    # gold evidence added: drawn in the text
    Annotation.objects.create(note=note, task=tasks["heart"], label="y", annotator_name="import:gold",
                              evidence=[list(word_span(TEXT, "Pacemaker"))])  # fmt: skip
    assert re.search(r'class="r\d+ g"[^>]*>Pacemaker<', marks(page(client, note, tasks, base, sharp)))


def test_a_changed_text_is_a_new_key():
    class Note:
        pk, text = 1, "HR 130"

    class Sel:
        task = model = None
        method, template, config = "attnlrp", "en", ""
        params = __import__("ml.peaks", fromlist=["PAPER"]).PAPER

    first = caching.key_for(Note, Sel, [], [], {})
    Note.text = "HR 131"
    assert caching.key_for(Note, Sel, [], [], {}) != first
    assert "130" not in first and "HR" not in first  # a digest: no note text in a key


def test_a_kept_panel_runs_fewer_queries_than_a_built_one(
    client, clinician, note, tasks, base, sharp, maps, django_assert_max_num_queries, django_assert_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(clinician)
    page(client, note, tasks, base, sharp)  # the menus and the stored peaks (first use)
    cache.clear()
    with CaptureQueriesContext(connection) as built:
        page(client, note, tasks, base, sharp)
    with CaptureQueriesContext(connection) as kept:
        page(client, note, tasks, base, sharp)
    assert len(kept) < len(built)
    assert not any("relevance" in q["sql"].lower() and "data" in q["sql"] and "md5" not in q["sql"] for q in kept)


def test_scores_of_the_fixture_are_what_the_map_holds(note):
    assert np.allclose(scores_for(TEXT, {"130": 0.9}).sum(), 0.9 * ((tokens(TEXT)[:, 0] == TEXT.index("130")).sum()))


class _CountingCache:
    """Django's cache, counting the calls that go to it (each one round trip to Redis)."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def __getattr__(self, name):
        method = getattr(self.inner, name)

        def counted(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)

        return counted


def test_a_kept_lookup_is_one_round_trip_and_a_renewal_is_read_again(db, monkeypatch):
    reads = []

    def read():
        reads.append(1)
        return f"value {len(reads)}"

    counting = _CountingCache(cache)
    monkeypatch.setattr(caching, "cache", counting)
    assert caching.kept("guideline", [1, 2], read) == "value 1"
    counting.calls.clear()
    assert caching.kept("guideline", [1, 2], read) == "value 1"
    assert counting.calls == ["get_many"] and len(reads) == 1
    caching.renew("guideline")  # a guideline version saved: the token changes
    assert caching.kept("guideline", [1, 2], read) == "value 2"
    assert caching.kept("guideline", [1, 3], read) == "value 3"  # other ids, another value
    assert caching.kept("guideline", [1, 2], read) == "value 2" and len(reads) == 3
