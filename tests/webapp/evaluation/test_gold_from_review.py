"""The localisation evaluation scores against the gold made in the app (webapp.evaluation.gold_sources,
filled by review's AppConfig.ready): a note whose only gold is a span a reviewer added, and one
whose only gold is a peak a reviewer kept, are planned, scored, and their origin is on the page."""

from tests.webapp.evaluation.factories import EVIDENCE, spec
from tests.webapp.evaluation.test_running import FakeRelevance, evidence_by_description, run
from tests.webapp.pipeline.factories import make_corpus, make_tasks
from webapp.evaluation import evaluations, gold_sources
from webapp.review import spans
from webapp.review.models import PeakDecision


def _phrase(note, task):
    start = note.text.find(EVIDENCE[task.slug])
    return start, start + len(EVIDENCE[task.slug])


def reviewed_corpus(clinician, model_version):
    """A corpus with no annotation at all: one pair's gold a span added in review, another's a peak
    kept in review, a third's a peak rejected (no gold)."""
    corpus, (heart,) = make_corpus(6, sentences=3), make_tasks(1)
    notes = [n for n in corpus.notes.order_by("pk") if EVIDENCE[heart.slug] in n.text]
    added, kept, rejected = notes[:3]
    start, end = _phrase(added, heart)
    spans.add(added, heart, clinician, start=start, end=end)
    for note, decision in ((kept, "accept"), (rejected, "reject")):
        start, end = _phrase(note, heart)
        PeakDecision.objects.create(
            note=note, task=heart, model_version=model_version, method="attnlrp", template="en",
            start=start, end=end, decision=decision, reviewer=clinician,
        )  # fmt: skip
    return corpus, heart, added, kept


def test_review_is_a_registered_gold_source():
    assert "review" in {source.name for source in gold_sources.sources()}


def test_an_evaluation_scores_spans_added_and_peaks_kept_in_review(clinician, model_version, client, researcher):
    corpus, heart, added, kept = reviewed_corpus(clinician, model_version)
    assert spec(corpus, model_version).problems() == {}
    assert evaluations.n_planned(spec(corpus, model_version)) == 2
    evaluation = evaluations.launch(spec(corpus, model_version, methods=["attention"]), enqueue=False)
    assert sorted(map(tuple, evaluation.pairs)) == sorted([(added.pk, heart.pk), (kept.pk, heart.pk)])

    outcome, evaluation = run(evaluation, FakeRelevance(evidence_by_description([heart])))
    assert outcome == "done", evaluation.error
    (group,) = evaluation.result["groups"]
    assert group["n_pairs"] == 2 and group["auc"] == 1.0 and evaluation.result["pairs_without_gold"] == 0
    assert evaluation.result["gold_origins"] == {
        "added_span": {"spans": 1, "pairs": 1},
        "accepted_peak": {"spans": 1, "pairs": 1},
    }
    found = gold_sources.evidence([(added.pk, heart.pk)])[(added.pk, heart.pk)]
    assert [(g.origin, g.annotator) for g in found] == [("added_span", clinician.get_username())]

    client.force_login(researcher)
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert "Gold evidence, by origin" in page
    assert '<span data-origin="accepted_peak">peaks kept in review: 1 span in 1 pair</span>' in page
    assert '<span data-origin="added_span">spans added in review: 1 span in 1 pair</span>' in page


def test_imported_and_review_gold_of_one_pair_are_one_union_with_both_origins(clinician, model_version):
    from webapp.corpus.models import Annotation

    corpus, heart, added, _ = reviewed_corpus(clinician, model_version)
    start, end = _phrase(added, heart)
    Annotation.objects.create(note=added, task=heart, label=heart.options[0], evidence=[[start, end]],
                              annotator_name="import:gold")  # fmt: skip
    pairs = evaluations.annotated_pairs(corpus, [heart])
    assert (added.pk, heart.pk) in pairs and len(pairs) == 2
    from webapp.evaluation.running import _gold

    origins: dict = {}
    gold = _gold([(added.pk, heart.pk)], origins)
    assert gold == {(added.pk, heart.pk): [(start, end)]}  # the same words from two origins: one span
    assert origins == {"imported": {"spans": 1, "pairs": 1}, "added_span": {"spans": 1, "pairs": 1}}


def test_a_corpus_with_no_gold_of_any_origin_is_refused(model_version):
    corpus = make_corpus(2)
    make_tasks(1)
    assert "nor peaks kept or spans added in review" in spec(corpus, model_version).problems()["corpus"]
