"""Importing gold evidence from annotation-tool files through a mapping: written atomically or not
at all, previewed without writing, offsets checked against the notes (UTF-16 ones converted)."""

import json
import zipfile
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.webapp.interchange.conftest import TEXTS
from webapp.audit.models import AuditEvent
from webapp.corpus.gold import import_gold
from webapp.corpus.models import Annotation

N1 = TEXTS["n1"]
N2 = TEXTS["n2"]


def _brat(folder, anns):
    folder.mkdir(exist_ok=True)
    for note_id, lines in anns.items():
        (folder / f"{note_id}.txt").write_text(TEXTS[note_id], encoding="utf-8")
        (folder / f"{note_id}.ann").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return folder


def _entity(n, label, text, word, nth=0):
    start = text.index(word) if not nth else text.index(word, text.index(word) + 1)
    return f"T{n}\t{label} {start} {start + len(word)}\t{word}"


def _good_brat(tmp_path):
    return _brat(
        tmp_path / "gold",
        {
            "n1": [
                _entity(1, "TACHY", N1, "HR 120"),
                _entity(2, "SYMPTOM", N1, "fever"),
                _entity(3, "DEVICE", N1, "chest"),
            ],
            "n2": [_entity(1, "NORMO", N2, "HR 60"), _entity(2, "NOFEVER", N2, "No fever")],
        },
    )


MAP = [
    "TACHY=heart-rate:tachycardic",
    "NORMO=heart rate:normocardic",
    "SYMPTOM=fever:present",
    "NOFEVER=fever:absent",
    "DEVICE=-",
]


def _import_gold(*args, **kwargs):
    """An import named for its annotator, as files without one (these hand-made ones) need."""
    return import_gold(*args, **{"annotator": "ward-team", **kwargs})


def _annotations():
    return sorted(
        (a.note.external_id, a.task.slug, a.label, a.evidence, a.annotator_name)
        for a in Annotation.objects.select_related("note", "task")
    )


def test_it_imports_mapped_brat_spans_as_gold_evidence(ward, tasks, tmp_path):
    gold = _import_gold(_good_brat(tmp_path), "ward", fmt="brat", mapping=MAP)
    assert gold.ok, gold.report.problem_lines()
    hr = N1.index("HR 120")
    assert _annotations() == [
        ("n1", "fever", "present", [[N1.index("fever"), N1.index("fever") + 5]], "ward-team"),
        ("n1", "heart-rate", "tachycardic", [[hr, hr + 6]], "ward-team"),
        ("n2", "fever", "absent", [[0, 8]], "ward-team"),
        ("n2", "heart-rate", "normocardic", [[10, 15]], "ward-team"),
    ]
    event = AuditEvent.objects.get(action=AuditEvent.Action.IMPORT_ANNOTATIONS)
    assert event.details["format"] == "brat" and "DEVICE -> skipped" in event.details["mapping"]
    again = _import_gold(_good_brat(tmp_path), "ward", fmt="brat", mapping=MAP)
    assert (again.report.created, again.report.unchanged) == (0, 4)


def test_a_dry_run_previews_and_writes_nothing(ward, tasks, tmp_path):
    gold = _import_gold(_good_brat(tmp_path), "ward", fmt="brat", mapping=MAP, dry_run=True)
    assert gold.ok
    assert Annotation.objects.count() == 0
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.IMPORT_ANNOTATIONS).exists()
    assert gold.preview == [
        "2 document(s) read in brat standoff",
        "DEVICE: 1 span(s) in 1 document(s) -> skipped",
        "NOFEVER: 1 span(s) in 1 document(s) -> fever:absent",
        "NORMO: 1 span(s) in 1 document(s) -> heart rate:normocardic",
        "SYMPTOM: 1 span(s) in 1 document(s) -> fever:present",
        "TACHY: 1 span(s) in 1 document(s) -> heart-rate:tachycardic",
        "annotator: ward-team (named for this import)",
        "annotations: 4 to create, 0 unchanged, 0 to update",
    ]


def test_an_unmapped_label_stops_the_import(ward, tasks, tmp_path):
    gold = _import_gold(_good_brat(tmp_path), "ward", fmt="brat", mapping=MAP[:-1])
    assert not gold.ok
    assert gold.report.problem_lines() == [
        "gold: no mapping for the label(s) 'DEVICE' (1 span): map each as LABEL=TASK:VALUE, LABEL=TASK "
        "(evidence only) or LABEL=- (skip), or skip every other label with *=-"
    ]
    assert Annotation.objects.count() == 0
    assert _import_gold(_good_brat(tmp_path), "ward", fmt="brat", mapping=[*MAP[:-1], "*=-"]).ok


def test_one_bad_document_writes_nothing(ward, tasks, tmp_path):
    folder = _good_brat(tmp_path)
    (folder / "n3.txt").write_text("A note the corpus does not have.")
    (folder / "n3.ann").write_text("T1\tTACHY 0 1\tA\n")
    mapping = [*MAP, "EXTRA=heart-rate:fast"]
    with (folder / "n2.ann").open("a") as f:
        f.write(_entity(3, "EXTRA", N2, "pacemaker") + "\n")
    gold = _import_gold(folder, "ward", fmt="brat", mapping=mapping)
    lines = gold.report.problem_lines()
    assert "n3.txt: document 'n3': the corpus has no note with this id" in lines
    assert any(line.startswith("n2.txt: task 'heart-rate': ") and "'fast'" in line for line in lines)
    assert Annotation.objects.count() == 0


def test_a_text_that_differs_from_the_note_is_refused(ward, tasks, tmp_path):
    folder = _good_brat(tmp_path)
    (folder / "n2.txt").write_text(N2.replace("No", "no"))
    (folder / "n2.ann").write_text("")
    gold = _import_gold(folder, "ward", fmt="brat", mapping=MAP)
    assert gold.report.problem_lines() == [
        "n2.txt: the text of document 'n2' differs from note 'n2' of the corpus (content hash), so its offsets "
        "would point at other words"
    ]


def test_label_studio_utf16_offsets_become_character_offsets(ward, tasks, tmp_path):
    fever = N1.index("fever")  # after one emoji: one more UTF-16 unit than code points
    task = {
        "id": 9,
        "data": {"text": N1, "note_id": "n1"},
        "annotations": [
            {
                "result": [
                    {"id": "a", "type": "labels", "value": {"start": fever + 1, "end": fever + 6, "labels": ["S"]}}
                ]
            }
        ],
        "predictions": [{"result": [{"id": "p", "type": "labels", "value": {"start": 0, "end": 2, "labels": ["S"]}}]}],
    }
    path = tmp_path / "export.json"
    path.write_text(json.dumps([task], ensure_ascii=False))
    gold = _import_gold(path, "ward", fmt="labelstudio", mapping=["S=fever:present"])
    assert gold.ok, gold.report.problem_lines()
    assert _annotations() == [("n1", "fever", "present", [[fever, fever + 5]], "ward-team")]
    assert "1 prediction span(s) skipped (only gold spans are evidence)" in gold.preview


def _xmi_zip(tmp_path):
    from cassis import Cas, TypeSystem

    ts = TypeSystem()
    event = ts.create_type("webanno.custom.EVENT", supertypeName="uima.tcas.Annotation")
    ts.create_feature(event, "polarity", "uima.cas.String")
    cas = Cas(typesystem=ts)
    cas.sofa_string = N1
    cas.add(event(begin=N1.index("fever"), end=N1.index("fever") + 5, polarity="POS"))
    cas.add(event(begin=N1.index("chest"), end=N1.index("chest") + 10, polarity="NEG"))
    archive = tmp_path / "e3c.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("export/n1.xml", cas.to_xmi())
    return archive


def test_xmi_evidence_only_takes_the_label_the_note_has(ward, tasks, tmp_path):
    Annotation.objects.create(
        note=ward.notes.get(external_id="n1"), task=tasks["fever"], label="present", annotator_name="x"
    )
    mapping = ["EVENT[polarity=POS]=fever", "EVENT=-"]
    gold = _import_gold(_xmi_zip(tmp_path), "ward", fmt="xmi", mapping=mapping, layer="EVENT", unpack_dir=tmp_path)
    assert gold.ok, gold.report.problem_lines()
    fever = N1.index("fever")
    assert ("n1", "fever", "present", [[fever, fever + 5]], "ward-team") in _annotations()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e3c.zip"]  # the unpacked folder is gone


def test_evidence_only_without_a_label_is_refused(ward, tasks, tmp_path):
    gold = _import_gold(_xmi_zip(tmp_path), "ward", fmt="xmi", mapping=["EVENT=fever"])
    assert gold.report.problem_lines() == [
        "n1.xml: document 'n1': task 'fever' is mapped as evidence only, but the note has no label for it; "
        "map it as TASK:VALUE"
    ]


def test_an_unsupported_format_names_the_supported_ones(ward, tmp_path):
    (tmp_path / "x.conll").write_text("x")
    gold = _import_gold(tmp_path / "x.conll", "ward", fmt="conll", mapping=[])
    assert gold.report.problem_lines() == [
        "x.conll: the format 'conll' is not supported; supported formats: jsonl, csv, brat, xmi, labelstudio, doccano"
    ]


def test_the_command_previews_then_imports(ward, tasks, tmp_path):
    folder = _good_brat(tmp_path)
    maps = [arg for m in MAP for arg in ("--map", m)]
    named = ("--annotator", "ward-team")
    out = StringIO()
    call_command(
        "import_annotations",
        str(folder),
        "--corpus",
        "ward",
        "--format",
        "brat",
        *maps,
        "--dry-run",
        *named,
        stdout=out,
    )
    assert "TACHY: 1 span(s) in 1 document(s) -> heart-rate:tachycardic" in out.getvalue()
    assert out.getvalue().endswith("Dry run: nothing was written to 'ward'.\n")
    assert Annotation.objects.count() == 0
    out = StringIO()
    call_command("import_annotations", str(folder), "--corpus", "ward", "--format", "brat", *maps, *named, stdout=out)
    assert "4 created, 0 updated, 0 unchanged" in out.getvalue()
    with pytest.raises(CommandError, match="doccano: no mapping for the label"):
        path = tmp_path / "doccano"
        path.write_text(json.dumps({"id": "n2", "text": N2, "label": [[0, 8, "NEG"]]}) + "\n")
        call_command(
            "import_annotations", str(path), "--corpus", "ward", "--format", "doccano", *named, stdout=StringIO()
        )


def test_a_label_studio_export_given_as_json_lines_says_what_it_is(ward, tasks, tmp_path):
    from webapp.corpus.importing import import_annotations

    path = tmp_path / "project-1.json"
    path.write_text(json.dumps([{"data": {"text": N1}}], indent=2))
    report = import_annotations(path, "ward")
    assert report.problem_lines() == [
        "project-1.json line 1: the file is one JSON array, not JSON lines (one object a line): a Label Studio "
        "export? Import it as gold labels from Label Studio JSON (import_annotations --format labelstudio, with a "
        "mapping)"
    ]


def test_notes_in_an_unsupported_format_name_the_supported_ones(ward, tmp_path):
    from webapp.corpus.importing import import_notes

    (tmp_path / "EN1.conll").write_text("x")
    report = import_notes(tmp_path / "EN1.conll", "ward")
    assert report.problem_lines() == [
        "EN1.conll: unsupported format; notes are read in these formats: jsonl (JSONL (this studio's)), csv (CSV "
        "(columns id, text)), brat (brat standoff), xmi (UIMA CAS XMI (INCEpTION, WebAnno)), labelstudio (Label "
        "Studio JSON), doccano (doccano JSONL); JSONL and CSV files may be compressed with gzip, bz2 or xz, the files "
        "of brat standoff or UIMA CAS XMI (INCEpTION, WebAnno) may come in a folder or a zip; name the format "
        "(--format, the Import page's Format) when the name of the file does not tell it"
    ]
    (tmp_path / "EN1.xmi").write_text("<xmi/>")  # one file of a folder format: told, and asked for whole
    report = import_notes(tmp_path / "EN1.xmi", "ward")
    assert report.problem_lines() == [
        "EN1.xmi: the xmi format needs a folder, or a zip archive of its .xmi and .xml files"
    ]


def test_evidence_over_the_span_limit_is_refused_and_overlaps_are_warned(ward, tasks, tmp_path, settings):
    settings.IMPORT_MAX_EVIDENCE_SPANS = 2
    lines = [_entity(1, "S", N1, "fever"), _entity(2, "S", N1, "chest"), _entity(3, "S", N1, "pain")]
    gold = _import_gold(_brat(tmp_path / "a", {"n1": lines}), "ward", fmt="brat", mapping=["S=fever:present"])
    assert gold.report.problem_lines() == [
        "n1.txt: document 'n1': the evidence of task 'fever' has 3 spans; the limit is 2 spans "
        "(IMPORT_MAX_EVIDENCE_SPANS)"
    ]
    chest = N1.index("chest")
    lines = [_entity(1, "S", N1, "chest pain"), f"T2\tS {chest} {chest + 5}\tchest"]
    gold = _import_gold(_brat(tmp_path / "b", {"n1": lines}), "ward", fmt="brat", mapping=["S=fever:present"])
    assert gold.ok
    assert gold.report.warning_lines() == [
        f"n1.txt: document 'n1', task 'fever': spans [{chest}, {chest + 5}) and [{chest}, {chest + 10}) overlap"
    ]


def test_a_zip_member_over_the_file_limit_is_refused_before_it_is_unpacked(ward, tasks, tmp_path, settings):
    settings.IMPORT_MAX_FILE_BYTES = 1000
    archive = tmp_path / "gold.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("gold/n1.txt", N1)
        zf.writestr("gold/n1.ann", "\n" * 5000)
    gold = _import_gold(archive, "ward", fmt="brat", mapping=MAP, unpack_dir=tmp_path)
    assert gold.report.problem_lines() == [
        "gold.zip: entry 'gold/n1.ann' has 5,000 bytes, more than the 1,000 one file may have "
        "(IMPORT_MAX_FILE_BYTES); it was not read"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gold.zip"]  # nothing unpacked, nothing left


def test_a_file_over_the_file_limit_is_refused_naming_it(ward, tasks, tmp_path, settings):
    settings.IMPORT_MAX_FILE_BYTES = 20
    gold = _import_gold(_good_brat(tmp_path), "ward", fmt="brat", mapping=MAP)
    assert gold.report.problem_lines() == [
        f"{name}: the file has {len(TEXTS[name[:2]].encode())} bytes, more than the 20 one file may have "
        "(IMPORT_MAX_FILE_BYTES); it was not read"
        for name in ("n1.txt", "n2.txt")
    ]


def test_a_checkpoint_stops_the_reading_between_documents(ward, tasks, tmp_path):
    folder = _good_brat(tmp_path)
    for n in range(3, 10):  # documents the corpus lacks: read and refused, had the reading gone on
        (folder / f"n{n}.txt").write_text("Another note.")
        (folder / f"n{n}.ann").write_text("")
    documents_read = []

    class Cancelled(Exception):
        pass

    def checkpoint():  # as a worker's, once a cancel arrives while the second document is read
        documents_read.append(1)
        if len(documents_read) == 2:
            raise Cancelled

    with pytest.raises(Cancelled):
        _import_gold(folder, "ward", fmt="brat", mapping=MAP, checkpoint=checkpoint)
    assert len(documents_read) == 2  # of 9
    assert Annotation.objects.count() == 0


def test_brat_fragments_out_of_text_order_get_the_notes_imports_verdict(ward, tasks, tmp_path):
    """One file, one verdict: fragments out of order are read in text order by both imports;
    overlapping ones are refused by both, for the same reason."""
    from webapp.corpus.importing import import_notes

    fever, chest = N1.index("fever"), N1.index("chest")
    backwards = f"T1\tS {chest} {chest + 5};{fever} {fever + 5}\tchest fever"
    gold = _import_gold(_brat(tmp_path / "a", {"n1": [backwards]}), "ward", fmt="brat", mapping=["S=fever:present"])
    assert gold.ok, gold.report.problem_lines()
    assert _annotations() == [("n1", "fever", "present", [[fever, fever + 5], [chest, chest + 5]], "ward-team")]
    notes = import_notes(_brat(tmp_path / "b", {"n1": [backwards]}), "from-brat", language="en", create=True)
    assert notes.ok, notes.problem_lines()

    overlapping = f"T1\tS {chest} {chest + 5};{chest + 2} {chest + 5}\tchest est"
    gold = _import_gold(_brat(tmp_path / "c", {"n1": [overlapping]}), "ward", fmt="brat", mapping=["S=fever:present"])
    notes = import_notes(_brat(tmp_path / "d", {"n1": [overlapping]}), "from-brat-2", language="en", create=True)
    reason = f"n1.ann line 1: entity 'T1': its fragments [{chest}, {chest + 5}) and [{chest + 2}, {chest + 5}) overlap"
    assert gold.report.problem_lines() == [reason]
    assert notes.problem_lines() == [reason]


def _clinentity_zip(tmp_path):
    """E3C's shape: CLINENTITY annotations of which only some carry entityID; no type system, so
    n2's inferred one has no entityID feature at all."""
    from cassis import Cas, TypeSystem

    archive = tmp_path / "e3c.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for note_id, spans in {"n1": [("fever", "C1"), ("chest", None)], "n2": [("HR 60", None)]}.items():
            ts = TypeSystem()
            entity = ts.create_type("webanno.custom.CLINENTITY", supertypeName="uima.tcas.Annotation")
            ts.create_feature(entity, "entityID", "uima.cas.String")
            cas = Cas(typesystem=ts)
            cas.sofa_string = TEXTS[note_id]
            for word, entity_id in spans:
                start = TEXTS[note_id].index(word)
                cas.add(entity(begin=start, end=start + len(word), **({"entityID": entity_id} if entity_id else {})))
            zf.writestr(f"{note_id}.xml", cas.to_xmi())
    return archive


def test_xmi_spans_without_the_chosen_feature_are_refused_skipped_or_given_a_default(ward, tasks, tmp_path):
    read = {"fmt": "xmi", "layer": "CLINENTITY", "feature": "entityID", "unpack_dir": tmp_path}
    refused = _import_gold(_clinentity_zip(tmp_path), "ward", mapping=["C1=fever:present"], **read)
    lines = refused.report.problem_lines()
    assert len(lines) == 2 and all("--missing-feature skip" in line for line in lines)
    assert lines[1].startswith("n2.xml: layer webanno.custom.CLINENTITY has no feature 'entityID'")

    skipped = _import_gold(
        _clinentity_zip(tmp_path), "ward", mapping=["C1=fever:present"], missing_feature="skip", dry_run=True, **read
    )
    assert skipped.ok, skipped.report.problem_lines()
    assert "2 span(s) without the feature 'entityID': skipped" in skipped.preview
    assert skipped.preview[-1] == "annotations: 1 to create, 0 unchanged, 0 to update"

    mapping = ["C1=fever:present", "unknown=heart-rate:normocardic"]
    given = _import_gold(
        _clinentity_zip(tmp_path), "ward", mapping=mapping, missing_feature="default", feature_default="unknown", **read
    )
    assert given.ok, given.report.problem_lines()
    assert "2 span(s) without the feature 'entityID': labelled 'unknown'" in given.preview
    assert [(note, task, label) for note, task, label, _, _ in _annotations()] == [
        ("n1", "fever", "present"),
        ("n1", "heart-rate", "normocardic"),
        ("n2", "heart-rate", "normocardic"),
    ]
    unnamed = _import_gold(_clinentity_zip(tmp_path), "ward", mapping=mapping, missing_feature="default", **read)
    assert unnamed.report.problem_lines() == [
        "e3c.zip: spans without the feature are to be given a default label: give it"
    ]
