"""Spans reviewers added in review go out in every annotation-tool export as gold spans of their
reviewer (a curator's choice as the curator's), and import back as that reviewer's annotation."""

import pytest

from tests.webapp.interchange.conftest import TEXTS
from webapp.corpus.gold import import_gold
from webapp.corpus.models import Annotation, Corpus
from webapp.interchange.exporting import ExportChoice, corpus_documents, export_corpus
from webapp.lib.formats import ReadOptions, get_format, writers
from webapp.lib.problems import Problems
from webapp.pipeline.models import ModelVersion
from webapp.review import spans
from webapp.review.models import ReviewRound, SpanAdjudication

N1, N2 = TEXTS["n1"], TEXTS["n2"]
CHEST = (N1.index("chest pain"), N1.index("chest pain") + len("chest pain"))
PACEMAKER = (N2.index("pacemaker"), N2.index("pacemaker") + len("pacemaker"))


@pytest.fixture
def added(ward, tasks, clinician):
    """n1: ann's imported fever annotation (present, on "fever"), and clara's added span on
    "chest pain" for fever; n2: clara's added span on "pacemaker" for heart rate, no label."""
    n1, n2 = ward.notes.get(external_id="n1"), ward.notes.get(external_id="n2")
    fever = N1.index("fever")
    Annotation.objects.create(
        note=n1, task=tasks["fever"], label="present", evidence=[[fever, fever + 5]], annotator_name="ann"
    )
    spans.add(n1, tasks["fever"], clinician, start=CHEST[0] + 2, end=CHEST[1] - 1)  # snapped to the words
    spans.add(n2, tasks["heart"], clinician, start=PACEMAKER[0], end=PACEMAKER[1])
    Corpus.objects.filter(pk=ward.pk).update(deidentified=True)  # its export may leave (test_gate.py)
    ward.deidentified = True
    return ward


def _gold(doc):
    return sorted((s.ranges, s.label, s.attrs, s.reviewer) for s in doc.spans if s.source == "gold")


def test_added_spans_are_gold_spans_of_their_reviewer_with_the_notes_label(added):
    docs = {d.id: d for d in corpus_documents(added, ExportChoice())}
    fever = N1.index("fever")
    assert _gold(docs["n1"]) == [
        (((fever, fever + 5),), "fever:present", {}, "ann"),
        ((CHEST,), "fever:present", {"origin": "added_span"}, "clara"),
    ]
    assert _gold(docs["n2"]) == [((PACEMAKER,), "heart-rate", {"origin": "added_span"}, "clara")]
    assert not any(d.spans for d in corpus_documents(added, ExportChoice(gold=False)))


def test_a_curators_choice_goes_out_as_the_curators_in_place_of_the_group(added, tasks, admin_user):
    n1 = added.notes.get(external_id="n1")
    model = ModelVersion.objects.create(name="tiny-model", family="llama", path="x")
    rnd = ReviewRound.objects.create(
        corpus=added, name="r", model_version=model, method="attnlrp", template="en", config_key="k"
    )
    SpanAdjudication.objects.create(round=rnd, note=n1, task=tasks["fever"], start=CHEST[0], end=CHEST[1],
                                    decision="accept", chosen_start=CHEST[0], chosen_end=CHEST[0] + 5,
                                    curator=admin_user)  # fmt: skip
    n1_doc = next(d for d in corpus_documents(added, ExportChoice()) if d.id == "n1")
    assert [(s.ranges, s.attrs, s.reviewer) for s in n1_doc.spans if s.reviewer != "ann"] == [
        (((CHEST[0], CHEST[0] + 5),), {"origin": "curator"}, "ada")
    ]


@pytest.mark.parametrize("fmt", sorted(f.name for f in writers()))
def test_every_format_holds_the_added_span_and_imports_it_back_as_the_reviewers(fmt, added, tasks, tmp_path):
    fmt_ = get_format(fmt)
    out = tmp_path / (fmt if fmt_.writes_folder else f"export{fmt_.suffix}")
    assert export_corpus(added, fmt, out, ExportChoice()) == 2
    problems = Problems()
    back = {d.id: d for d in fmt_.read(out, ReadOptions(), problems)}
    assert not problems, problems.lines()
    chest = [s for s in back["n1"].spans if s.ranges == (CHEST,)]
    assert [s.label for s in chest] == ["fever:present"]
    carries_reviewer = "reviewer" in fmt_.carries
    if carries_reviewer:  # doccano carries labels only: the import names the annotator instead
        assert [s.reviewer for s in chest] == ["clara"]
    # n2's span has no label value (the note has none for the task): a mapping names it evidence only
    # of a value given first, as any evidence-only import
    n2 = added.notes.get(external_id="n2")
    Annotation.objects.create(note=n2, task=tasks["heart"], label="normocardic", evidence=[], annotator_name="clara")
    named = {} if carries_reviewer else {"annotator": "clara"}
    report = import_gold(out, "ward", fmt=fmt, mapping=["heart-rate=heart-rate"], update=True, **named)
    assert report.ok, report.report.problem_lines()
    clara = {
        (a.note.external_id, a.task.slug): (a.label, a.evidence)
        for a in Annotation.objects.filter(annotator_name="clara")
    }
    want = {("n1", "fever"): ("present", [list(CHEST)]), ("n2", "heart-rate"): ("normocardic", [list(PACEMAKER)])}
    if not carries_reviewer:  # every span of the file is clara's then, ann's fever too
        fever = N1.index("fever")
        want[("n1", "fever")] = ("present", [[fever, fever + 5], list(CHEST)])
    assert clara == want
    assert Annotation.objects.get(annotator_name="ann").evidence == [[N1.index("fever"), N1.index("fever") + 5]]
