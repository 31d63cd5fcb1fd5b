"""Peak decisions: one row per reviewer, optimistic concurrency, undo, conflicts, audit, and the
rule that makes them rejected spans for dataset builds."""

import pytest

from webapp.audit.models import AuditEvent
from webapp.datasets import building
from webapp.review import decisions
from webapp.review.decisions import DecisionError, PeakContext, StaleDecision
from webapp.review.models import PeakDecision

from .fabricate import TEXT, word_span

SPAN = word_span(TEXT, "130")
OTHER = word_span(TEXT, "tachycardic")


@pytest.fixture
def ctx(note, tasks, base, maps):
    return PeakContext(note, tasks["heart"], base, "attnlrp", "en")


@pytest.fixture
def second_clinician(django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("carl", password="x" * 12)
    user.groups.add(Group.objects.get_or_create(name="clinician")[0])
    return user


def decide(ctx, user, decision="accept", version=0, span=SPAN, **extra):
    return decisions.decide(ctx, user, start=span[0], end=span[1], decision=decision, expected_version=version, **extra)


def test_a_first_decision_is_version_one_and_is_audited_without_text(ctx, clinician):
    row = decide(ctx, clinician, comment="heart rate value")
    assert (row.decision, row.version, row.previous) == ("accept", 1, None)
    event = AuditEvent.objects.get(action=AuditEvent.Action.REVIEW_DECISION)
    assert event.actor == clinician and event.object_id == str(row.pk)
    assert event.details["span"] == list(SPAN) and event.details["decision"] == "accept"
    assert event.details["note"] == ctx.note.pk and event.details["op"] == "create"
    # ids and offsets only: no string in the entry quotes the note or the comment
    strings = [v for v in event.details.values() if isinstance(v, str)]
    assert not any(s and (s in ctx.note.text or s in "heart rate value") for s in strings if len(s) > 2)
    assert "'130'" not in str(event.details) and "heart rate value" not in str(event.details)


@pytest.mark.django_db(transaction=True)
def test_a_decision_and_its_undo_are_kept_only_with_their_audit_rows(ctx, clinician, monkeypatch):
    def audit_fails(*args, **kwargs):
        raise RuntimeError("the audit table refused the row")

    monkeypatch.setattr(decisions, "record", audit_fails)
    with pytest.raises(RuntimeError):
        decide(ctx, clinician)
    assert not PeakDecision.objects.exists()  # no decision without its audit row
    monkeypatch.undo()
    row = decide(ctx, clinician)
    monkeypatch.setattr(decisions, "record", audit_fails)
    with pytest.raises(RuntimeError):
        decisions.undo_last(clinician, ctx.note)
    assert PeakDecision.objects.filter(pk=row.pk).exists()  # the undo is rolled back with its audit row
    assert AuditEvent.objects.filter(action=AuditEvent.Action.REVIEW_DECISION).count() == 1


def test_changing_a_decision_needs_the_version_the_page_showed(ctx, clinician):
    row = decide(ctx, clinician)
    changed = decide(ctx, clinician, "reject", version=row.version)
    assert (changed.pk, changed.decision, changed.version) == (row.pk, "reject", 2)
    assert changed.previous["decision"] == "accept"


def test_a_stale_page_is_refused_and_shows_the_current_decision(ctx, clinician):
    row = decide(ctx, clinician)
    decide(ctx, clinician, "reject", version=1)  # another tab
    with pytest.raises(StaleDecision) as refused:
        decide(ctx, clinician, "accept", version=1)  # the first tab, still showing version 1
    assert refused.value.current.decision == "reject" and refused.value.current.version == 2
    assert "out of date" in str(refused.value)
    row.refresh_from_db()
    assert row.decision == "reject"


def test_a_page_that_showed_no_decision_cannot_overwrite_one_made_meanwhile(ctx, clinician):
    decide(ctx, clinician, "reject")
    with pytest.raises(StaleDecision) as refused:
        decide(ctx, clinician, "accept", version=0)
    assert refused.value.current.decision == "reject"


def test_a_decision_undone_elsewhere_is_not_silently_recreated(ctx, clinician):
    decide(ctx, clinician)
    decisions.undo_last(clinician, ctx.note)
    with pytest.raises(StaleDecision):
        decide(ctx, clinician, "reject", version=1)
    assert not PeakDecision.objects.exists()


def test_two_reviewers_each_keep_their_own_row(ctx, clinician, second_clinician):
    decide(ctx, clinician, "accept")
    decide(ctx, second_clinician, "reject")
    rows = {d.reviewer.username: d.decision for d in PeakDecision.objects.all()}
    assert rows == {"clara": "accept", "carl": "reject"}


def test_different_outcomes_of_two_reviewers_are_a_conflict(ctx, clinician, second_clinician):
    decide(ctx, clinician, "accept")
    assert not decisions.is_conflict(decisions.decisions_on(ctx))
    decide(ctx, second_clinician, "accept")
    assert not decisions.is_conflict(decisions.decisions_on(ctx))
    row = PeakDecision.objects.get(reviewer=second_clinician)
    decide(ctx, second_clinician, "adjust", version=row.version, adjusted_start=SPAN[0], adjusted_end=OTHER[1])
    assert decisions.is_conflict(decisions.decisions_on(ctx))


def test_overlapping_spans_are_compared_for_conflicts(ctx, clinician):
    decide(ctx, clinician)
    found = decisions.overlapping(decisions.decisions_on(ctx), SPAN[0] - 3, SPAN[0] + 1)
    assert len(found) == 1
    assert decisions.overlapping(decisions.decisions_on(ctx), *OTHER) == []


def test_undo_removes_a_new_decision_and_restores_a_changed_one(ctx, clinician):
    row = decide(ctx, clinician, "accept")
    decide(ctx, clinician, "reject", version=row.version, span=SPAN)
    op, undone = decisions.undo_last(clinician, ctx.note)
    assert op == "undo-update" and undone.decision == "accept" and undone.version == 3
    op, _ = decisions.undo_last(clinician, ctx.note)
    assert op == "undo-create" and not PeakDecision.objects.exists()
    assert decisions.undo_last(clinician, ctx.note) is None
    assert AuditEvent.objects.filter(details__op__startswith="undo").count() == 2


def test_undo_touches_only_the_reviewers_own_latest_decision(ctx, clinician, second_clinician):
    decide(ctx, clinician, "accept", span=SPAN)
    decide(ctx, clinician, "reject", span=OTHER)
    decide(ctx, second_clinician, "reject", span=SPAN)
    decisions.undo_last(clinician, ctx.note)
    left = set(PeakDecision.objects.values_list("reviewer__username", "start"))
    assert left == {("clara", SPAN[0]), ("carl", SPAN[0])}


@pytest.mark.parametrize("start, end", [(5, 5), (0, len(TEXT) + 1)])
def test_a_span_outside_the_note_is_refused(ctx, clinician, start, end):
    with pytest.raises(DecisionError):
        decisions.decide(ctx, clinician, start=start, end=end, decision="accept", expected_version=0)


def test_an_adjusted_span_must_be_inside_the_note(ctx, clinician):
    with pytest.raises(DecisionError):
        decide(ctx, clinician, "adjust", adjusted_start=10, adjusted_end=10)
    row = decide(ctx, clinician, "adjust", adjusted_start=SPAN[0], adjusted_end=OTHER[1])
    assert (row.adjusted_start, row.adjusted_end) == (SPAN[0], OTHER[1])
    reverted = decide(ctx, clinician, "accept", version=row.version)
    assert reverted.adjusted_start is None and reverted.adjusted_end is None


# ---------------------------------------------------------------- rejected spans for dataset builds


@pytest.fixture
def third_clinician(django_user_model):
    return django_user_model.objects.create_user("cleo", password="x" * 12)


def test_a_span_rejected_by_the_only_reviewer_is_rejected(ctx, clinician, tasks):
    decide(ctx, clinician, "reject")
    decide(ctx, clinician, "accept", span=OTHER)
    key = (ctx.note.pk, tasks["heart"].pk)
    assert building.rejected_char_spans([ctx.note.pk], [tasks["heart"].pk]) == {key: [SPAN]}


def test_the_majority_of_reviewers_decides_and_a_tie_rejects(ctx, clinician, second_clinician, third_clinician, tasks):
    key = (ctx.note.pk, tasks["heart"].pk)
    decide(ctx, clinician, "reject")
    decide(ctx, second_clinician, "accept")
    assert building.rejected_char_spans([ctx.note.pk], [tasks["heart"].pk]) == {key: [SPAN]}  # 1 - 1: tie
    decide(ctx, third_clinician, "adjust", adjusted_start=SPAN[0], adjusted_end=OTHER[1])
    assert building.rejected_char_spans([ctx.note.pk], [tasks["heart"].pk]) == {}  # 1 reject, 2 keep


def test_only_each_reviewers_latest_decision_on_a_span_counts_across_models(
    ctx, clinician, second_clinician, dsm, tasks
):
    decide(ctx, clinician, "reject")
    dsm_ctx = PeakContext(ctx.note, ctx.task, dsm, "attnlrp", "en")
    decide(dsm_ctx, clinician, "accept")  # later, same reviewer, same span, another model: this one counts
    decide(ctx, second_clinician, "accept")
    assert building.rejected_char_spans([ctx.note.pk], [tasks["heart"].pk]) == {}
    row = PeakDecision.objects.get(reviewer=clinician, model_version=dsm)
    decide(dsm_ctx, clinician, "reject", version=row.version)
    key = (ctx.note.pk, tasks["heart"].pk)
    assert building.rejected_char_spans([ctx.note.pk], [tasks["heart"].pk]) == {key: [SPAN]}


def test_rejections_are_kept_to_the_notes_and_tasks_asked_for(ctx, clinician, tasks):
    decide(ctx, clinician, "reject")
    assert building.rejected_char_spans([ctx.note.pk], [tasks["pacemaker"].pk]) == {}
    assert building.rejected_char_spans([ctx.note.pk + 1], [tasks["heart"].pk]) == {}


def test_a_dataset_build_leaves_out_a_rejected_peak(ctx, clinician, corpus, base, sharp, tasks):
    from webapp.datasets.models import DatasetVersion, MaskedExample

    def build(name):
        dataset = DatasetVersion.objects.create(
            name=name, corpus=corpus, model_version=base, profile=sharp, filters={"tasks": [tasks["heart"].pk]}
        )
        building.build(building.claim(dataset.pk))
        return sorted(MaskedExample.objects.filter(dataset=dataset).values_list("label", flat=True))

    assert build("before") == ["tachycardic"]  # peaks "130" and "tachycardic": the right one is masked
    decide(ctx, clinician, "reject", span=OTHER)
    assert build("after") == []  # one peak left: the two-peaks rule drops the pair
