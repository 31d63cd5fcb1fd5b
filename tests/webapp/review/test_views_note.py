"""The note page: relevance colours, peaks, gold, the htmx panel, sliders and decisions."""

import html
import re

import pytest
from django.urls import reverse

from webapp.review.models import PeakDecision

from .fabricate import TEXT, query, word_span

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "note-panel"}


def url(note):
    return reverse("review:note", args=[note.corpus_id, note.pk])


def text_block(content: str) -> str:
    return re.search(r'<div class="notetext" id="note-text">(.*?)</div>', content, re.S).group(1)


def note_text(content: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text_block(content)))


def peak_texts(content: str) -> list[str]:
    return [
        html.unescape(re.sub(r"<[^>]+>", "", m))
        for m in re.findall(r"<mark [^>]*>(.*?)</mark>", text_block(content), re.S)
    ]


def marks(content):
    return re.findall(r'<mark class="peak ([^"]*)" id="peak-\d+"', content)


@pytest.fixture
def page(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)

    def get(**extra):
        return client.get(url(note), {**query(tasks["heart"], base, sharp), **extra.pop("params", {})}, **extra)

    return get


def test_the_note_is_shown_as_written_with_its_peaks_and_gold(page, gold):
    response = page()
    content = response.content.decode()
    assert response.status_code == 200
    assert note_text(content) == TEXT
    assert peak_texts(content) == ["130", "tachycardic"]
    assert 'class="r7 g" title="0.90">130<' in content  # relevance colour, gold underline, value
    assert "gold evidence" in content and "import:gold" in content
    assert 'class="legend"' in content


def test_an_htmx_request_for_the_panel_gets_only_the_panel(page):
    response = page(**HX)
    content = response.content.decode()
    assert content.lstrip().startswith('<section id="note-panel"')
    assert "<html" not in content and 'id="tuning"' not in content


def test_the_sliders_change_the_peaks(page):
    assert peak_texts(page(params={"upper": "0.85"}, **HX).content.decode()) == ["130"]
    assert peak_texts(page(params={"lower": "0.05", "upper": "0.05"}, **HX).content.decode()) == [
        "130",
        "tachycardic",
        "febrile",
    ]
    content = page(params={"k": "3"}, **HX).content.decode()  # smoothing spreads and merges
    assert peak_texts(content) == ["HR 130 bpm,  tachycardic"]  # trimmed: no ";" at the end
    assert "not saved" in content


def test_bad_slider_values_fall_back_to_the_profile_and_say_so(page):
    content = page(params={"lower": "0.9", "upper": "0.1"}).content.decode()
    assert "must not be above" in content
    assert peak_texts(content) == ["130", "tachycardic"]


def test_one_slider_moved_past_the_others_value_is_refused_not_a_server_error(page):
    """The profile's upper threshold is 0.4: a lower one of 0.9 alone crosses it."""
    for params in ({"lower": "0.9"}, {"upper": "0.05"}):
        response = page(params=params, **HX)
        content = response.content.decode()
        assert response.status_code == 200, params
        assert "must not be above" in content, params
        assert peak_texts(content) == ["130", "tachycardic"], params


def test_another_task_or_model_shows_its_own_map(page, tasks, dsm):
    assert peak_texts(page(params={"task": tasks["pacemaker"].pk}, **HX).content.decode()) == ["Pacemaker", "2019"]
    assert peak_texts(page(params={"model": dsm.pk}, **HX).content.decode()) == ["130", "tachycardic", "Pacemaker"]


def test_a_note_without_a_map_is_still_shown(client, clinician, corpus):
    from webapp.corpus.models import Note

    bare = Note.objects.create(corpus=corpus, external_id="bare", text="No map <here>.\n")
    client.force_login(clinician)
    content = client.get(url(bare)).content.decode()
    assert note_text(content) == "No map <here>.\n" and "Relevance not computed yet" in content
    assert "peaks not computed yet" in content and "0 peaks" not in content
    assert reverse("pipeline:job_launch") not in content  # a clinician does not launch jobs


def test_a_note_without_a_map_offers_a_researcher_to_launch_a_job_for_it(client, researcher, corpus, tasks):
    from webapp.corpus.models import Note

    bare = Note.objects.create(corpus=corpus, external_id="bare one", text="No map here.\n")
    client.force_login(researcher)
    content = client.get(url(bare), {"task": tasks["heart"].pk}).content.decode()
    launch = f"{reverse('pipeline:job_launch')}?corpus={corpus.pk}"
    assert launch in content and "external_ids=bare%20one" in content
    assert f"task_selection=list&amp;tasks={tasks['heart'].pk}" in content


def test_previous_and_next_notes_follow_the_task(client, clinician, note, corpus, tasks, base, sharp, maps):
    from webapp.corpus.models import Note

    from .fabricate import add_map

    Note.objects.create(corpus=corpus, external_id="n2-no-map", text=TEXT)
    third = Note.objects.create(corpus=corpus, external_id="n3", text=TEXT)
    add_map(third, tasks["heart"], base, {"130": 0.9})
    client.force_login(clinician)
    content = client.get(url(note), query(tasks["heart"], base, sharp)).content.decode()
    assert f'rel="next" href="/review/{corpus.pk}/notes/{third.pk}/' in content and 'rel="prev"' not in content


# ---------------------------------------------------------------- decisions


def post(client, note, tasks, base, sharp, word="130", decision="accept", version=0, htmx=True, headers=None, **extra):
    a, b = word_span(TEXT, word)
    data = {
        **query(tasks["heart"], base, sharp),
        "k": 1,
        "sigma": 1.0,
        "lower": 0.2,
        "upper": 0.4,
        "start": a,
        "end": b,
        "decision": decision,
        "version": version,
        **extra,
    }
    headers = headers or (HX if htmx else {})
    return client.post(reverse("review:decide", args=[note.corpus_id, note.pk]), data, **headers)


def test_accepting_a_peak_returns_the_panel_with_the_decision(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    response = post(client, note, tasks, base, sharp, comment="the rate")
    content = response.content.decode()
    assert response.status_code == 200
    assert "You accepted the peak «130»" in content
    assert marks(content)[0].startswith("mine-accept")
    row = PeakDecision.objects.get()
    assert (row.reviewer, row.decision, row.comment, row.profile, row.params["lower"]) == (
        clinician,
        "accept",
        "the rate",
        sharp,
        0.2,
    )


def test_without_htmx_a_decision_redirects_back_to_the_note(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    response = post(client, note, tasks, base, sharp, htmx=False, decision="reject")
    assert response.status_code == 302 and response["Location"].startswith(url(note))
    page = client.get(response["Location"]).content.decode()
    assert "You rejected the peak «130»" in page and marks(page)[0].startswith("mine-reject")


def test_a_stale_page_is_refused_with_409_and_shows_the_current_decision(
    client, clinician, note, tasks, base, sharp, maps
):
    client.force_login(clinician)
    post(client, note, tasks, base, sharp, decision="reject")
    post(client, note, tasks, base, sharp, decision="accept", version=1)  # another tab: now version 2
    response = post(client, note, tasks, base, sharp, decision="reject", version=1)
    content = response.content.decode()
    assert response.status_code == 409
    assert "out of date" in content and marks(content)[0].startswith("mine-accept")
    plain = post(client, note, tasks, base, sharp, decision="reject", version=1, htmx=False)
    assert plain.status_code == 409 and "<html" in plain.content.decode()
    assert PeakDecision.objects.get().decision == "accept"


ROW = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "peak-item-0"}  # the page's decide form targets its row


def test_a_decision_from_the_pages_form_answers_with_its_row_and_the_counters_out_of_band(
    client, clinician, note, tasks, base, sharp, maps
):
    client.force_login(clinician)
    data = {"k": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4}
    page = client.get(url(note), query(tasks["heart"], base, sharp, **data)).content.decode()
    assert 'hx-target="#peak-item-0"' in page and '<span id="decided-count">0 decided by you</span>' in page
    response = post(client, note, tasks, base, sharp, decision="accept", comment="the rate", headers=ROW)
    content = response.content.decode()
    assert response.status_code == 200 and "note-panel" not in content and "<mark" not in content
    assert content.lstrip().startswith('<li class="peak-item mine-accept" id="peak-item-0" data-peak="0">')
    assert 'You: <strong class="state-word">Accept' in content and "the rate" in content
    assert '<input type="hidden" name="version" value="1">' in content  # the next decision on it is version 1's
    assert '<div id="panel-notice" hx-swap-oob="true"><p class="notice notice-25" role="status">You accepted' in content
    assert '<span id="decided-count" hx-swap-oob="true">1 decided by you</span>' in content
    full = client.get(url(note), query(tasks["heart"], base, sharp, **data)).content.decode()
    assert '<span id="decided-count">1 decided by you</span>' in full  # the same as a fresh page says


def test_a_refused_decision_replaces_the_panel_whatever_the_form_targets(
    client, clinician, note, tasks, base, sharp, maps
):
    client.force_login(clinician)
    post(client, note, tasks, base, sharp, decision="reject")
    response = post(client, note, tasks, base, sharp, decision="accept", version=0, headers=ROW)  # stale
    assert response.status_code == 409 and 'id="note-panel"' in response.content.decode()
    assert (response["HX-Retarget"], response["HX-Reswap"]) == ("#note-panel", "outerHTML")
    invalid = post(client, note, tasks, base, sharp, decision="maybe", headers=ROW)
    assert invalid.status_code == 400 and invalid["HX-Retarget"] == "#note-panel"


def test_a_span_that_is_not_a_peak_is_refused(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    response = post(client, note, tasks, base, sharp, word="bpm")
    assert response.status_code == 409 and "not a peak" in response.content.decode()
    assert not PeakDecision.objects.exists()


def test_adjusting_stores_new_word_boundaries(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    a = word_span(TEXT, "HR")[0]
    b = word_span(TEXT, "bpm")[1]
    response = post(client, note, tasks, base, sharp, decision="adjust", adjusted_start=a, adjusted_end=b)
    assert "You adjusted to «HR 130 bpm» the peak «130»" in response.content.decode()
    row = PeakDecision.objects.get()
    assert (row.adjusted_start, row.adjusted_end) == (a, b)


def test_the_adjust_form_offers_word_boundaries_around_the_peak(page):
    content = page().content.decode()
    a, b = word_span(TEXT, "130")
    hr = word_span(TEXT, "HR")[0]
    first_form = content[content.index('name="adjusted_start"') : content.index('name="adjusted_end"')]
    assert f'value="{hr}"' in first_form and f'value="{a}" selected' in first_form


def test_another_reviewers_different_decision_is_shown_as_a_conflict(
    client, clinician, admin_user, note, tasks, base, sharp, maps
):
    client.force_login(admin_user)
    post(client, note, tasks, base, sharp, decision="reject", comment="just a number")
    client.force_login(clinician)
    response = post(client, note, tasks, base, sharp, decision="accept")
    content = response.content.decode()
    assert "Reviewers disagree" in content
    assert "ada" in content and "Rejected" in content and "clara (you)" in content and "just a number" in content
    assert PeakDecision.objects.count() == 2


def test_undo_reverts_the_last_decision(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    post(client, note, tasks, base, sharp)
    response = client.post(
        reverse("review:undo", args=[note.corpus_id, note.pk]), {**query(tasks["heart"], base, sharp), "k": 1}, **HX
    )
    assert "Undone" in response.content.decode() and not PeakDecision.objects.exists()
    again = client.post(
        reverse("review:undo", args=[note.corpus_id, note.pk]), query(tasks["heart"], base, sharp), **HX
    )
    assert "no decision on this note to undo" in again.content.decode()


def test_a_researcher_reads_the_page_without_decision_buttons(client, researcher, note, tasks, base, sharp, maps):
    client.force_login(researcher)
    content = client.get(url(note), query(tasks["heart"], base, sharp)).content.decode()
    assert peak_texts(content) == ["130", "tachycardic"]
    assert 'value="accept"' not in content and "only clinicians record decisions" in content


def test_the_queue_link_goes_over_every_task_from_this_pair_on(page, note, tasks):
    content = page().content.decode()
    link = re.search(r'id="queue-link" href="([^"]+)"', content).group(1)
    assert f"after={note.pk}:{tasks['heart'].pk}" in html.unescape(link)
    assert "task=" not in html.unescape(link).split("after=")[0]


def test_maps_of_another_relevance_configuration_are_chosen_not_mixed(
    client, clinician, note, tasks, base, sharp, maps, corpus
):
    from ml.relevance import RelevanceConfig
    from webapp.pipeline.models import RelevanceJob, RelevanceMap
    from webapp.review import browse
    from webapp.review.selection import for_note

    from .fabricate import scores_for, tokens

    span = RelevanceConfig(explain="span")
    RelevanceJob.objects.create(
        corpus=corpus, model_version=base, explain="span", config=span.to_dict(), config_key=span.key
    )
    offsets = tokens(TEXT)
    RelevanceMap.objects.store_one(
        note, tasks["heart"], base, offsets, scores_for(TEXT, {"febrile": 0.9}), config_key=span.key
    )
    client.force_login(clinician)
    default = client.get(url(note), query(tasks["heart"], base, sharp), **HX).content.decode()
    chosen = client.get(url(note), {**query(tasks["heart"], base, sharp), "config": span.key}, **HX).content.decode()
    assert "febrile" not in peak_texts(default) and peak_texts(chosen) == ["febrile"]
    full = client.get(url(note), query(tasks["heart"], base, sharp)).content.decode()
    assert 'name="config"' in full and "explain span" in full and "explain next (default)" in full
    sel = for_note(note, {**query(tasks["heart"], base, sharp), "config": span.key})
    assert sel.config == span.key and f"config={span.key}" in sel.query()
    assert browse.summarise([note.pk], sel)[note.pk].peaks == 1  # the span map only
    # a decision on the span map's peak counts under that configuration only
    from webapp.review import decisions

    start, end = word_span(TEXT, "febrile")
    ctx = decisions.PeakContext(note, tasks["heart"], base, "attnlrp", "en", span.key)
    decisions.decide(ctx, clinician, start=start, end=end, decision="accept", expected_version=0)
    assert browse.summarise([note.pk], sel)[note.pk].decided == 1
    assert browse.summarise([note.pk], for_note(note, query(tasks["heart"], base, sharp)))[note.pk].decided == 0
