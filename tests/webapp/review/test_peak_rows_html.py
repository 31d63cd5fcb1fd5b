"""The note page's peak rows are written in Python (noteview.row_html, issue 41: they were most of
the page's template time). They must be what the template wrote: the same markup in every
language, every text from the note or a reviewer escaped. The reference below is the template's
row as it was (peak_row_reference.html; its CSRF and selection fields given as written, as the view gives them)."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.template import engines
from django.utils import translation
from django.utils.safestring import mark_safe

from webapp.review import noteview
from webapp.review.models import PeakDecision

REFERENCE = (Path(__file__).parent / "peak_row_reference.html").read_text(encoding="utf-8")

TEXT = "Pt said \"<script>alert('x')</script>\" & left; chest pain & dyspnoea. " + "word " * 60
ME, OTHER = 7, 8


def decision(reviewer_id, name, outcome, start, end, *, adjusted=None, comment=""):
    user = get_user_model()(pk=reviewer_id, username=name)
    d = PeakDecision(reviewer=user, decision=outcome, start=start, end=end, version=3, comment=comment)
    d.adjusted_start, d.adjusted_end = adjusted or (None, None)
    d.updated = datetime(2026, 3, 4, 23, 30, tzinfo=UTC)
    return d


def rows():
    """Undecided; mine adjusted with a comment and another reviewer's accept (a conflict); mine
    accepted and another's accept shown below it (no conflict)."""
    span = (8, 40)
    mine = decision(ME, "me", "adjust", *span, adjusted=(9, 30), comment="<b>\"odd\"</b> & 'so'")
    theirs = decision(OTHER, '<i>"eve"</i>', "accept", *span, comment="<script>x</script>")
    agreed_mine = decision(ME, "me", "accept", 0, 20)
    agreed = decision(OTHER, "o'neil", "accept", 0, 20)
    out = []
    for i, (a, b), decisions in [(0, (50, 60), []), (1, span, [mine, theirs]), (2, (0, 20), [agreed_mine, agreed])]:
        noteview._quote(TEXT, decisions)
        mine_of = {(d.start, d.end): d for d in decisions if d.reviewer_id == ME}
        out.append(noteview._peak_row(TEXT, i, (a, b), decisions, mine_of))
    return out


@pytest.mark.parametrize("code", ["en", "it", "es"])
@pytest.mark.parametrize("can_review", [True, False])
def test_a_peak_row_written_in_python_is_what_the_template_wrote(code, can_review, settings):
    settings.TIME_ZONE = "Europe/Rome"  # the time is shown in the current time zone, as |date did
    page = noteview.RowPage(
        decide_url="/review/1/notes/2/decide/?a=1&b=2",
        csrf_html=mark_safe('<input type="hidden" name="csrfmiddlewaretoken" value="tok">'),
        fields_html=mark_safe('<input type="hidden" name="task" value="3">'),
        window_index=2,
        guideline_version=4,
        user_id=ME,
        can_review=can_review,
    )
    reference = engines["django"].from_string(REFERENCE)
    with translation.override(code):
        for row in rows():
            context = {"p": row, "user_id": ME, "guideline_version": 4, **page.__dict__}
            assert noteview.row_html(row, page) == reference.render(context)


def test_a_peak_row_escapes_the_note_and_the_reviewers_texts():
    page = noteview.RowPage("/d/", "", "", 0, 0, ME, True)
    written = "".join(noteview.row_html(row, page) for row in rows())
    assert "<script>" not in written and "<b>" not in written and "<i>" not in written
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in written  # the note's text, quoted
    assert "&lt;b&gt;&quot;odd&quot;&lt;/b&gt; &amp; &#x27;so&#x27;" in written  # my comment, twice
    assert "&lt;i&gt;&quot;eve&quot;&lt;/i&gt;" in written and "o&#x27;neil" in written  # reviewers' names
    assert "2026-03-04 23:30" in written  # in the settings' time zone (UTC)


FIELDS = ("pk", "reviewer_id", "decision", "start", "end", "adjusted_start", "adjusted_end", "comment", "updated",
          "version", "outcome")  # fmt: skip


def test_the_decisions_a_note_page_shows_are_the_models_rows(note, tasks, base, maps, clinician, django_user_model):
    """shown_decisions (one query built once per process, no model instances) reads what
    decisions_on reads: the same rows in the same order, the same fields and reviewer names."""
    from webapp.review import decisions
    from webapp.review.decisions import PeakContext

    ctx = PeakContext(note, tasks["heart"], base, "attnlrp", "en")
    other = django_user_model.objects.create_user('<b>"carl"</b>', password="x" * 12)
    decisions.decide(ctx, clinician, start=0, end=5, decision="accept", expected_version=0, comment="a & b")
    decisions.decide(
        ctx, other, start=0, end=5, decision="adjust", expected_version=0, adjusted_start=1, adjusted_end=4
    )
    decisions.decide(ctx, other, start=6, end=9, decision="reject", expected_version=0)
    models, shown = decisions.decisions_on(ctx), decisions.shown_decisions(ctx)
    assert len(shown) == 3
    for m, s in zip(models, shown, strict=True):
        assert [getattr(s, f) for f in FIELDS] == [getattr(m, f) for f in FIELDS]
        assert s.reviewer.get_username() == m.reviewer.get_username()
        assert s.get_decision_display() == m.get_decision_display()


@pytest.mark.parametrize("code", ["en", "it", "es"])
def test_the_note_pages_keyboard_help_is_the_help_template_in_the_readers_language(
    client, clinician, note, maps, tasks, base, sharp, code
):
    """The help is written once per process and language (review_page.help_html), not per page."""
    from django.template.loader import get_template
    from django.urls import reverse

    from .fabricate import query

    client.force_login(clinician)
    url = reverse("review:note", args=[note.corpus_id, note.pk])
    for _ in range(2):  # written, then kept
        page = client.get(url, query(tasks["heart"], base, sharp), HTTP_ACCEPT_LANGUAGE=code)
        with translation.override(code):
            assert get_template("review/_help.html").render({}) in page.content.decode()
