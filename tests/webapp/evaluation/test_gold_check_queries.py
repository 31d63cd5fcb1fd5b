"""The launch form's gold check and estimate on a corpus whose only gold is made in review: the
rules of webapp.review.gold.evidence asked in SQL (has_gold, pair_rows) give the same pairs as
reading the rows, and the check takes as many queries with 60 decisions as with one. Marked
`embedded`: the SQL runs on the demo's SQLite too (make test's second run)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.conftest import _make_user
from tests.webapp.evaluation.factories import spec
from tests.webapp.pipeline.factories import make_corpus, make_tasks
from webapp.corpus.models import Annotation
from webapp.evaluation import evaluations, gold_sources
from webapp.pipeline.models import ModelVersion
from webapp.review import gold
from webapp.review.models import AddedSpan, Adjudication, PeakDecision, ReviewRound, SpanAdjudication

pytestmark = pytest.mark.embedded


def _decide(note, task, model, reviewer, decision, start=0, end=4, when=None):
    row = PeakDecision.objects.create(
        note=note, task=task, model_version=model, method="attnlrp", template="en",
        start=start, end=end, decision=decision, reviewer=reviewer,
    )  # fmt: skip
    if when is not None:  # auto_now: set the time of the change afterwards
        PeakDecision.objects.filter(pk=row.pk).update(updated=when)
    return row


def _settle(rnd, note, task, curator):
    """A curator rejects the group of added spans at 0-8."""
    SpanAdjudication.objects.create(round=rnd, note=note, task=task, start=0, end=8, decision="reject", curator=curator)


def test_the_rules_in_sql_give_the_pairs_reading_the_rows_gives(
    clinician, researcher, model_version, django_user_model
):
    corpus, (task,) = make_corpus(12, sentences=2), make_tasks(1)
    notes = list(corpus.notes.order_by("pk"))
    ana, ben = clinician, _make_user(django_user_model, "ben", "clinician")
    other = ModelVersion.objects.create(name="other-model", family="llama", path="other-model")
    earlier, later = timezone.now() - timedelta(hours=1), timezone.now()
    # 0: kept by ana, rejected by ben: half reject (a tie) -> rejected, no gold
    _decide(notes[0], task, model_version, ana, "accept")
    _decide(notes[0], task, model_version, ben, "reject")
    # 1: the same, but a curator kept the span -> gold
    _decide(notes[1], task, model_version, ana, "accept")
    _decide(notes[1], task, model_version, ben, "reject")
    Adjudication.objects.create(note=notes[1], task=task, start=0, end=4, decision="accept", curator=researcher)
    # 2: kept by ana alone, a curator rejected it -> no gold
    _decide(notes[2], task, model_version, ana, "accept")
    Adjudication.objects.create(note=notes[2], task=task, start=0, end=4, decision="reject", curator=researcher)
    # 3: ben rejected under one model, then accepted under another: his latest keeps -> gold
    _decide(notes[3], task, model_version, ana, "accept")
    _decide(notes[3], task, model_version, ben, "reject", when=earlier)
    _decide(notes[3], task, other, ben, "accept", when=later)
    # 4: ben accepted first, then rejected: 1 of 2 latest reject -> rejected, no gold
    _decide(notes[4], task, model_version, ana, "accept")
    _decide(notes[4], task, model_version, ben, "accept", when=earlier)
    _decide(notes[4], task, other, ben, "reject", when=later)
    # 5: kept by two, rejected by one: 1 of 3 -> gold
    carl = _make_user(django_user_model, "carl", "clinician")
    for who, decision in ((ana, "accept"), (carl, "accept"), (ben, "reject")):
        _decide(notes[5], task, model_version, who, decision)
    # 6: only rejected -> no gold
    _decide(notes[6], task, model_version, ana, "reject")
    # 7: an added span inside a group a curator rejected -> no gold; 8: one outside it -> gold
    rnd = ReviewRound.objects.create(
        corpus=corpus, name="r", model_version=model_version, method="attnlrp", template="en", config_key="k"
    )
    AddedSpan.objects.create(note=notes[7], task=task, reviewer=ana, start=2, end=6)
    _settle(rnd, notes[7], task, researcher)
    AddedSpan.objects.create(note=notes[8], task=task, reviewer=ana, start=10, end=14)
    _settle(rnd, notes[8], task, researcher)
    # 9: a curator's choice on a group keeps a span -> gold
    SpanAdjudication.objects.create(
        round=rnd, note=notes[9], task=task, start=0, end=8, decision="accept", chosen_start=0, chosen_end=4,
        curator=researcher,
    )  # fmt: skip

    expected = {(notes[i].pk, task.pk) for i in (1, 3, 5, 8, 9)}
    assert set(gold.pairs_of(corpus, [task])) == expected  # reading the rows, the reference
    assert set(gold.pair_rows(corpus, [task])) == expected
    assert gold.has_gold(corpus, [task])
    assert evaluations.n_planned(spec(corpus, model_version, tasks=[task])) == len(expected)
    Annotation.objects.create(note=notes[0], task=task, label=task.options[0], evidence=[[0, 4]], annotator_name="imp")
    Annotation.objects.create(note=notes[1], task=task, label=task.options[0], evidence=[[0, 4]], annotator_name="imp")
    assert gold_sources.count_pairs(corpus, [task]) == len(gold_sources.gold_pairs(corpus, [task])) == 6


def test_has_gold_is_false_when_every_kept_peak_is_overruled(clinician, researcher, model_version, django_user_model):
    corpus, (task,) = make_corpus(3, sentences=2), make_tasks(1)
    note = corpus.notes.first()
    ben = _make_user(django_user_model, "ben", "clinician")
    _decide(note, task, model_version, clinician, "accept")
    _decide(note, task, model_version, ben, "reject")
    assert not gold.has_gold(corpus, [task]) and gold.pairs_of(corpus, [task]) == []
    assert "has no annotation with evidence spans" in spec(corpus, model_version, tasks=[task]).problems()["corpus"]
    Adjudication.objects.create(note=note, task=task, start=0, end=4, decision="accept", curator=researcher)
    assert gold.has_gold(corpus, [task]) and "corpus" not in spec(corpus, model_version, tasks=[task]).problems()


def test_the_gold_check_takes_the_same_queries_with_many_decisions(clinician, model_version, django_user_model):
    corpus, (task,) = make_corpus(30, sentences=2), make_tasks(1)
    notes = list(corpus.notes.order_by("pk"))
    ben = _make_user(django_user_model, "ben", "clinician")
    _decide(notes[0], task, model_version, clinician, "accept")
    _decide(notes[0], task, model_version, ben, "reject")  # overruled: the check must look further

    def check():
        with CaptureQueriesContext(connection) as queries:
            problems = spec(corpus, model_version, tasks=[task]).problems()
            planned = evaluations.n_planned(spec(corpus, model_version, tasks=[task]))
        decision_rows = [
            q["sql"] for q in queries.captured_queries
            if q["sql"].startswith(('SELECT "review_peakdecision"', 'SELECT DISTINCT "review_peakdecision"'))
        ]  # fmt: skip
        assert not decision_rows, decision_rows  # asked in EXISTS and COUNT, never read row by row
        return len(queries), problems, planned

    few, problems, planned = check()
    assert "corpus" in problems and planned == 0
    for note in notes[1:]:  # 29 more pairs, each kept by one reviewer and overruled by another
        _decide(note, task, model_version, clinician, "accept")
        _decide(note, task, model_version, ben, "reject")
    _decide(notes[-1], task, model_version, clinician, "accept", start=6, end=9)  # the one kept span
    many, problems, planned = check()
    assert many == few and "corpus" not in problems and planned == 1


def test_the_rules_agree_on_random_histories(clinician, researcher, model_version, django_user_model):
    """The ten cases above, then 60 pairs of seeded random histories: several spans a pair, up to
    four reviewers deciding under two models at three instants (ties broken by the row's id, as
    `rejected_spans` breaks them), curators on some spans, added spans on, inside and across
    settled groups' bounds, decisions of another task and of another corpus. The SQL and the
    reading of the rows must give the same pairs for each choice of tasks."""
    import random

    rng = random.Random(41)
    corpus, other_corpus = make_corpus(30, sentences=2), make_corpus(3, name="other ward", sentences=2)
    tasks = make_tasks(2)
    reviewers = [clinician] + [_make_user(django_user_model, f"r{i}", "clinician") for i in range(3)]
    models = [model_version, ModelVersion.objects.create(name="m2", family="llama", path="m2")]
    rnd = ReviewRound.objects.create(
        corpus=corpus, name="r", model_version=model_version, method="attnlrp", template="en", config_key="k"
    )
    instants = [timezone.now() - timedelta(minutes=m) for m in (30, 20, 10)]
    spans = [(0, 4), (6, 9), (10, 14)]
    decisions, added, at = {}, {}, {}
    *notes, tied = corpus.notes.order_by("pk")
    # a tie in time: ben's two decisions at one instant, the later row (his accept) is his latest
    _decide(tied, tasks[0], model_version, clinician, "accept")
    _decide(tied, tasks[0], models[0], reviewers[1], "reject", when=instants[0])
    _decide(tied, tasks[0], models[1], reviewers[1], "accept", when=instants[0])
    for note in [*notes, *other_corpus.notes.all()]:
        for task in tasks:
            if rng.random() < 0.2:
                continue
            for start, end in rng.sample(spans, rng.randint(1, 2)):
                for who in rng.sample(reviewers, rng.randint(1, 4)):
                    for model in rng.sample(models, rng.randint(1, 2)):
                        decision = rng.choice(["accept", "reject", "reject", "adjust"])
                        adjusted = (start, end - 1) if decision == "adjust" else (None, None)
                        row = PeakDecision(
                            note=note, task=task, model_version=model, method="attnlrp", template="en",
                            start=start, end=end, decision=decision, reviewer=who,
                            adjusted_start=adjusted[0], adjusted_end=adjusted[1],
                        )  # fmt: skip
                        decisions[(note.pk, task.pk, model.pk, start, end, who.pk)] = row
                        at[id(row)] = rng.choice(instants)
                if rng.random() < 0.25:
                    Adjudication.objects.create(
                        note=note, task=task, start=start, end=end, curator=researcher,
                        decision=rng.choice(["accept", "reject"]),
                    )  # fmt: skip
            for _ in range(rng.randint(0, 2)):
                start = rng.choice([0, 2, 6, 8])
                end = start + rng.choice([2, 4, 6])
                added[(note.pk, task.pk, start, end)] = AddedSpan(
                    note=note, task=task, reviewer=clinician, start=start, end=end
                )
            if note.corpus_id == corpus.pk and rng.random() < 0.3:
                start, end = (2, 6) if rng.random() < 0.5 else (None, None)
                SpanAdjudication.objects.create(
                    round=rnd, note=note, task=task, start=2, end=8, curator=researcher, chosen_start=start,
                    chosen_end=end, decision="reject" if start is None else "accept",
                )  # fmt: skip
    PeakDecision.objects.bulk_create(decisions.values())
    AddedSpan.objects.bulk_create(added.values())
    for when in instants:  # auto_now: set the times afterwards, one UPDATE an instant
        pks = [row.pk for row in decisions.values() if at[id(row)] == when]
        PeakDecision.objects.filter(pk__in=pks).update(updated=when)

    assert (tied.pk, tasks[0].pk) in gold.pairs_of(corpus, [tasks[0]])
    seen = set()
    for chosen in ([], [tasks[0]], [tasks[1]], tasks):
        expected = set(gold.pairs_of(corpus, chosen))
        assert set(gold.pair_rows(corpus, chosen)) == expected, chosen
        assert gold.has_gold(corpus, chosen) == bool(expected)
        assert gold_sources.count_pairs(corpus, chosen) == len(gold_sources.gold_pairs(corpus, chosen))
        seen |= expected
    # the histories are varied enough to mean something: gold and no gold both occur
    candidates = set(PeakDecision.objects.filter(note__corpus=corpus).values_list("note_id", "task_id"))
    assert 10 <= len(seen) and len(candidates - seen) >= 5, (len(seen), len(candidates - seen))
