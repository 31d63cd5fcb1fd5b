"""Exporting a corpus: gold spans, peaks as pre-annotations and review decisions in every format
of the table; an export imports back (gold) with the same evidence; the command line and the
corpus page's download."""

import json
import zipfile
from io import BytesIO, StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from ml.peaks import PeakParams, note_peaks
from tests.webapp.interchange.conftest import TEXTS
from tests.webapp.review.fabricate import add_map, tokens
from webapp.audit.models import AuditEvent
from webapp.corpus.gold import import_gold
from webapp.corpus.models import Annotation, Corpus
from webapp.interchange.exporting import ExportChoice, corpus_documents, export_corpus, peak_source
from webapp.lib.formats import ReadOptions, get_format, writers
from webapp.lib.problems import Problems
from webapp.pipeline.models import ModelVersion, PeakProfile
from webapp.review.models import Adjudication, PeakDecision

N1 = TEXTS["n1"]
SHARP = dict(kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)  # no smoothing: each scored word is a peak


@pytest.fixture
def gold(ward, tasks):
    n1, n2 = ward.notes.get(external_id="n1"), ward.notes.get(external_id="n2")
    fever = N1.index("fever")
    Annotation.objects.create(
        note=n1, task=tasks["fever"], label="present", evidence=[[fever, fever + 5]], annotator_name="ann"
    )
    Annotation.objects.create(
        note=n1,
        task=tasks["heart"],
        label="tachycardic",
        evidence=[[3, 4], [N1.index("HR"), N1.index("HR") + 6]],
        annotator_name="ann",
    )
    Annotation.objects.create(note=n2, task=tasks["fever"], label="absent", evidence=[], annotator_name="ann")
    # de-identified, so its export may leave: the gate has its own tests (test_gate.py)
    Corpus.objects.filter(pk=ward.pk).update(deidentified=True)
    ward.deidentified = True
    return ward


@pytest.fixture
def reviewed(gold, tasks, clinician, admin_user):
    model = ModelVersion.objects.create(name="tiny-model", family="llama", path="x")
    PeakProfile.objects.create(name="sharp", **SHARP)
    n1 = gold.notes.get(external_id="n1")
    add_map(n1, tasks["fever"], model, {"fever": 0.9, "pain": 0.5}, template="en")
    fever = N1.index("fever")
    common = dict(note=n1, task=tasks["fever"], model_version=model, method="attnlrp", template="en")
    PeakDecision.objects.create(**common, start=fever, end=fever + 5, decision="accept", reviewer=clinician)
    PeakDecision.objects.create(
        **common,
        start=fever,
        end=fever + 5,
        decision="adjust",
        adjusted_start=fever - 8,
        adjusted_end=fever + 5,
        reviewer=admin_user,
    )
    Adjudication.objects.create(
        note=n1, task=tasks["fever"], start=fever, end=fever + 5, decision="accept", curator=admin_user
    )
    return model


def _spans(doc, source):
    rows = sorted((s.ranges, s.label, s.attributes, s.reviewer) for s in doc.spans if s.source == source)
    return [(ranges, label, dict(attributes), reviewer) for ranges, label, attributes, reviewer in rows]


def test_gold_spans_are_labelled_task_and_value(gold):
    docs = {d.id: d for d in corpus_documents(gold, ExportChoice())}
    fever, hr = N1.index("fever"), N1.index("HR")
    assert _spans(docs["n1"], "gold") == [
        (((3, 4),), "heart-rate:tachycardic", {}, "ann"),
        (((fever, fever + 5),), "fever:present", {}, "ann"),
        (((hr, hr + 6),), "heart-rate:tachycardic", {}, "ann"),
    ]
    assert docs["n2"].spans == []  # a label without evidence has no span


def test_peaks_and_decisions_come_as_predictions_and_decisions(reviewed, gold):
    choice = ExportChoice(gold=False, peaks=peak_source(gold, "tiny-model", profile_name="sharp"), decisions=True)
    (n1,) = [d for d in corpus_documents(gold, choice) if d.id == "n1"]
    _, expected = note_peaks(
        __import__("numpy").asarray(
            [0.9 if N1[a:b] == "fever" else 0.5 if N1[a:b] == "pain" else 0.0 for a, b in tokens(N1)]
        ),
        tokens(N1),
        N1,
        PeakParams(**SHARP),
    )
    assert [s.ranges[0] for s in n1.spans if s.source == "prediction"] == sorted(expected)
    assert {s.reviewer for s in n1.spans if s.source == "prediction"} == {"tiny-model"}
    fever = N1.index("fever")
    peak = f"{fever}-{fever + 5}"
    assert _spans(n1, "decision") == [
        (((fever - 8, fever + 5),), "fever", {"decision": "adjust", "peak": peak}, "ada"),
        (((fever, fever + 5),), "fever", {"adjudicated": "true", "decision": "accept", "peak": peak}, "ada"),
        (((fever, fever + 5),), "fever", {"decision": "accept", "peak": peak}, "clara"),
    ]


@pytest.mark.parametrize("fmt", sorted(f.name for f in writers()))
def test_an_export_imports_back_with_the_same_evidence(fmt, gold, tmp_path):
    fmt_ = get_format(fmt)
    out = tmp_path / (fmt if fmt_.writes_folder else f"export{fmt_.suffix}")
    assert export_corpus(gold, fmt, out, ExportChoice()) == 2
    before = {(a.note_id, a.task_id): (a.label, sorted(a.evidence)) for a in Annotation.objects.exclude(evidence=[])}
    report = import_gold(out, "ward", fmt=fmt, mapping=[], annotator="round-trip")
    assert report.ok, report.report.problem_lines()
    after = {
        (a.note_id, a.task_id): (a.label, a.evidence) for a in Annotation.objects.filter(annotator_name="round-trip")
    }
    assert after == before


@pytest.mark.parametrize("fmt", sorted(f.name for f in writers() if "reviewer" in f.carries))
def test_a_round_trip_through_a_tool_leaves_the_gold_unchanged(fmt, gold, tmp_path):
    """Export, re-import with no annotator named: each span's annotator comes from the file, so the
    annotations it came from are found "unchanged", never copied under a name made of the file's."""
    fmt_ = get_format(fmt)
    out = tmp_path / (fmt if fmt_.writes_folder else f"export{fmt_.suffix}")
    export_corpus(gold, fmt, out, ExportChoice())
    preview = import_gold(out, "ward", fmt=fmt, mapping=[], dry_run=True)
    assert (preview.report.created, preview.report.unchanged) == (0, 2), preview.report.problem_lines()
    assert preview.preview[-1] == "annotations: 0 to create, 2 unchanged, 0 to update"
    assert any(line.startswith("annotator(s) as written in the file, by gold spans: ann (") for line in preview.preview)
    imported = import_gold(out, "ward", fmt=fmt, mapping=[])
    assert (imported.report.created, imported.report.unchanged) == (0, 2)
    assert set(Annotation.objects.values_list("annotator_name", flat=True)) == {"ann"}
    assert Annotation.objects.count() == 3


def test_a_file_that_names_no_annotator_needs_one_named(gold, tmp_path):
    out = tmp_path / "export.jsonl"
    export_corpus(gold, "doccano", out, ExportChoice())  # doccano carries labels only
    refused = import_gold(out, "ward", fmt="doccano", mapping=[])
    assert refused.report.problem_lines() == [
        "export.jsonl: 3 gold span(s) name no annotator: name the annotator of this import (a person or a source, "
        "e.g. the corpus's annotation project): --annotator, or Annotator on the Import page"
    ]
    named = import_gold(out, "ward", fmt="doccano", mapping=[], annotator="ann", dry_run=True)
    assert (named.report.created, named.report.unchanged) == (0, 2)  # a span split in two is one evidence again


@pytest.mark.parametrize("fmt", sorted(f.name for f in writers()))
def test_every_format_carries_peaks_and_decisions(fmt, reviewed, gold, tmp_path):
    fmt_ = get_format(fmt)
    out = tmp_path / (fmt if fmt_.writes_folder else f"export{fmt_.suffix}")
    choice = ExportChoice(peaks=peak_source(gold, "tiny-model", profile_name="sharp"), decisions=True)
    export_corpus(gold, fmt, out, choice)
    written = {d.id: d for d in corpus_documents(gold, choice)}
    problems = Problems()
    back = {d.id: d for d in fmt_.read(out, ReadOptions(), problems)}
    assert not problems, problems.lines()
    for note_id, doc in written.items():
        want = sorted((s.ranges, s.label) for s in doc.spans)
        assert sorted((s.ranges, s.label) for s in back[note_id].spans) == want
        if "source" in fmt_.carries:
            # brat allows no whitespace in an attribute's value: it is written as "_"
            space = "_" if fmt == "brat" else " "
            assert sorted((s.ranges, s.source, s.reviewer, s.attributes) for s in back[note_id].spans) == sorted(
                (s.ranges, s.source, s.reviewer, tuple((k, v.replace(" ", space)) for k, v in s.attributes))
                for s in doc.spans
            )


def test_label_studio_export_puts_peaks_in_predictions(reviewed, gold, tmp_path):
    export_corpus(
        gold,
        "labelstudio",
        tmp_path / "ls.json",
        ExportChoice(peaks=peak_source(gold, "tiny-model", profile_name="sharp")),
    )
    tasks = {t["data"]["note_id"]: t for t in json.loads((tmp_path / "ls.json").read_text())}
    fever = N1.index("fever")
    predicted = [r["value"] for p in tasks["n1"]["predictions"] for r in p["result"]]
    assert {"start": fever + 1, "end": fever + 6, "text": "fever", "labels": ["fever"]} in predicted  # UTF-16: +1
    assert [p["model_version"] for p in tasks["n1"]["predictions"]] == ["tiny-model"]


def test_the_command_exports_and_audits(gold, tmp_path):
    out = StringIO()
    call_command("export_annotations", "--corpus", "ward", "--format", "brat", "--out", str(tmp_path / "b"), stdout=out)
    assert out.getvalue() == f"2 note(s) of 'ward' written to {tmp_path / 'b'} (brat).\n"
    written = sorted(p.name for p in (tmp_path / "b").iterdir())
    assert written == ["annotation.conf", "n1.ann", "n1.txt", "n2.ann", "n2.txt"]
    event = AuditEvent.objects.get(action=AuditEvent.Action.EXPORT)
    assert event.details["format"] == "brat" and event.details["notes"] == 2 and event.details["gold"] is True
    with pytest.raises(
        CommandError, match="the format 'conll' is not written by the annotation export; formats written: jsonl, brat"
    ):
        call_command("export_annotations", "--corpus", "ward", "--format", "conll", "--out", str(tmp_path / "c"))
    with pytest.raises(CommandError, match="no model version named 'nope'"):
        call_command("export_annotations", "--corpus", "ward", "--format", "jsonl", "--out", "x", "--peaks", "nope")


def test_the_corpus_page_downloads_an_export(gold, researcher, client_for, tmp_path):
    client = client_for(researcher)
    corpus_page = client.get(reverse("corpus:detail", args=[gold.pk])).content.decode()
    assert f'href="{reverse("interchange:export", args=[gold.pk])}"' in corpus_page
    page = client.get(reverse("interchange:export", args=[gold.pk]))
    assert page.status_code == 200
    for name in (f.name for f in writers()):  # one button per format of the table that has a writer
        assert f'value="{name}"' in page.content.decode()
    response = client.get(reverse("interchange:export", args=[gold.pk]), {"format": "xmi", "gold": "on"})
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="ward-xmi.zip"'
    archive = zipfile.ZipFile(BytesIO(b"".join(response.streaming_content)))
    assert sorted(archive.namelist()) == ["xmi/TypeSystem.xml", "xmi/n1.xmi", "xmi/n2.xmi"]


def test_a_clinician_cannot_export(gold, clinician, client_for):
    response = client_for(clinician).get(reverse("interchange:export", args=[gold.pk]), {"format": "jsonl"})
    assert response.status_code == 403


def test_another_projects_researcher_gets_not_found(gold, django_user_model, client_for):
    from tests.projects import make_member
    from webapp.projects.models import Project

    elsewhere = Project.objects.create(slug="other", name="Other")
    outsider = make_member(django_user_model.objects.create_user("otto", password="x"), "researcher", elsewhere)
    response = client_for(outsider).get(reverse("interchange:export", args=[gold.pk]), {"format": "jsonl"})
    assert response.status_code == 404
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT).exists()


def test_the_page_offers_peaks_of_models_the_user_may_see_and_exports_them(reviewed, gold, researcher, client_for):
    client = client_for(researcher)
    page = client.get(reverse("interchange:export", args=[gold.pk])).content.decode()
    assert '<option value="tiny-model">tiny-model</option>' in page
    profile = PeakProfile.objects.get(name="sharp")
    query = {"format": "jsonl", "gold": "", "peaks": "tiny-model", "profile": profile.pk, "decisions": "on"}
    response = client.get(reverse("interchange:export", args=[gold.pk]), query)
    archive = zipfile.ZipFile(BytesIO(b"".join(response.streaming_content)))
    docs = [json.loads(line) for line in archive.read("jsonl.jsonl").decode().splitlines()]
    sources = sorted({s["source"] for d in docs for s in d["spans"]})
    assert sources == ["decision", "prediction"]
