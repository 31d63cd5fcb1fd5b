"""Importing gold annotations: good files, idempotence, --update, audit, and bad input."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.webapp.corpus.conftest import write_jsonl
from webapp.audit.models import AuditEvent
from webapp.corpus.importing import import_annotations
from webapp.corpus.models import Annotation, Note

TEXT = "Paziente portatore di pacemaker. FC 120 bpm."  # 44 characters


@pytest.fixture
def ward(corpus, tasks):
    for external_id in ("n1", "n2", "n3", "4"):
        Note.objects.create(corpus=corpus, external_id=external_id, text=TEXT)
    return corpus


def line(note="n1", task="presence-of-pacemaker", label="y", evidence=((22, 31),), **extra):
    return {"note_id": note, "task": task, "label": label, "evidence": [list(s) for s in evidence], **extra}


def good_lines():
    return [
        line("n1"),
        line("n1", task="heart rate", label="tachycardic", evidence=[[33, 39], [40, 43]]),
        line(4, task="pulse", label="unknown", evidence=[]),  # int note id, task by alias
        {"note_id": "n3", "task": "presence-of-pacemaker", "label": "n"},  # evidence optional
    ]


def test_it_imports_annotations_by_slug_description_or_alias(ward, tmp_path):
    path = write_jsonl(tmp_path / "gold.jsonl", good_lines())
    report = import_annotations(path, "ward")
    assert (report.created, report.unchanged, report.updated) == (4, 0, 0)
    heart = Annotation.objects.get(note__external_id="n1", task__slug="heart-rate")
    assert (heart.label, heart.evidence, heart.annotator_name) == (
        "tachycardic",
        [[33, 39], [40, 43]],
        "import:gold.jsonl",
    )
    assert heart.annotator is None
    assert Annotation.objects.get(note__external_id="4").task.slug == "heart-rate"
    assert Annotation.objects.get(note__external_id="n3").evidence == []


def test_the_command_reports_counts_and_takes_an_annotator_name(ward, tmp_path):
    out = StringIO()
    path = write_jsonl(tmp_path / "gold.jsonl", good_lines(), bom=True)
    call_command("import_annotations", str(path), "--corpus", "ward", "--annotator", "dr-bianchi", stdout=out)
    assert "4 created, 0 updated, 0 unchanged" in out.getvalue()
    assert set(Annotation.objects.values_list("annotator_name", flat=True)) == {"dr-bianchi"}


def test_reimporting_the_same_annotations_changes_nothing(ward, tmp_path):
    path = write_jsonl(tmp_path / "gold.jsonl", good_lines())
    import_annotations(path, "ward")
    before = list(Annotation.objects.order_by("pk").values())
    report = import_annotations(path, "ward", batch_size=2)
    assert (report.created, report.unchanged, report.updated) == (0, 4, 0)
    assert list(Annotation.objects.order_by("pk").values()) == before


def test_update_replaces_a_changed_label(ward, tmp_path):
    import_annotations(write_jsonl(tmp_path / "gold.jsonl", good_lines()), "ward")
    changed = good_lines()
    changed[0] = line("n1", label="unknown", evidence=[])
    report = import_annotations(write_jsonl(tmp_path / "gold.jsonl", changed), "ward", update=True)
    assert (report.created, report.unchanged, report.updated) == (0, 3, 1)
    annotation = Annotation.objects.get(note__external_id="n1", task__slug="presence-of-pacemaker")
    assert (annotation.label, annotation.evidence) == ("unknown", [])


def test_an_annotation_import_is_audited(ward, tmp_path):
    import_annotations(write_jsonl(tmp_path / "gold.jsonl", good_lines()), "ward", annotator="dr-b")
    event = AuditEvent.objects.get(action=AuditEvent.Action.IMPORT_ANNOTATIONS)
    assert event.object_id == str(ward.pk)
    assert event.details == {"file": "gold.jsonl", "annotator": "dr-b", "created": 4, "unchanged": 0, "updated": 0}


def bad(tmp_path, *lines):
    return write_jsonl(tmp_path / "gold.jsonl", [line("n1"), *lines, line("n3")])


BAD = {
    "invalid JSON": (lambda p: bad(p, '{"note_id": "n2",'), ["gold.jsonl line 2: invalid JSON"]),
    "missing label": (lambda p: bad(p, {"note_id": "n2", "task": "heart rate"}), ["line 2: missing field(s) label"]),
    "task of the wrong type": (
        lambda p: bad(p, line("n2", task=["heart rate"])),
        ["line 2: field 'task' must be a non-empty string, not an array"],
    ),
    "unknown field": (
        lambda p: bad(p, line("n2", comment="x")),
        ["line 2: unknown field(s) comment (allowed: note_id, task, label, evidence)"],
    ),
    "unknown task": (
        lambda p: bad(p, line("n2", task="heart-rat")),
        ["line 2: unknown task 'heart-rat' (give a task slug or description; did you mean 'heart-rate'"],
    ),
    "unknown label": (
        lambda p: bad(p, line("n2", label="yes")),
        ["line 2: task 'presence-of-pacemaker': label 'yes' is not one of the task's options ('y', 'n', 'unknown')"],
    ),
    "label with other case": (
        lambda p: bad(p, line("n2", task="heart rate", label="Tachycardic", evidence=[])),
        [
            "line 2: task 'heart-rate': label 'Tachycardic' is not one of the task's options "
            "('bradycardic', 'normocardic', 'tachycardic', 'unknown')"
        ],
    ),
    "unknown note": (lambda p: bad(p, line("n9")), ["line 2: note_id 'n9' is not in corpus 'ward'"]),
    "span past the end": (
        lambda p: bad(p, line("n2", evidence=[[40, 45]])),
        ["line 2: note 'n2': evidence[0] [40, 45) ends past the text (length 44)"],
    ),
    "span start equals end": (
        lambda p: bad(p, line("n2", evidence=[[5, 5]])),
        ["line 2: field 'evidence': evidence[0] [5, 5) is empty or reversed (start >= end)"],
    ),
    "span reversed": (
        lambda p: bad(p, line("n2", evidence=[[9, 3]])),
        ["line 2: field 'evidence': evidence[0] [9, 3) is empty or reversed"],
    ),
    "negative start": (
        lambda p: bad(p, line("n2", evidence=[[-1, 3]])),
        ["line 2: field 'evidence': evidence[0] [-1, 3) starts before the text"],
    ),
    "span not a pair": (
        lambda p: bad(p, line("n2", evidence=[[1, 2, 3]])),
        ["line 2: field 'evidence': evidence[0] must be a pair of integers [start, end]"],
    ),
    "float offsets": (
        lambda p: bad(p, line("n2", evidence=[[1.0, 2]])),
        ["line 2: field 'evidence': evidence[0] must be a pair of integers"],
    ),
    "evidence not a list": (
        lambda p: bad(p, {**line("n2"), "evidence": "0-4"}),
        ["line 2: field 'evidence': evidence must be a list of [start, end] pairs, not str"],
    ),
    "duplicate note and task": (
        lambda p: bad(p, line("n2"), line("n2", task="presence of pacemaker", label="n")),
        ["line 3: duplicate annotation of note 'n2' for task 'presence-of-pacemaker' (first on line 2)"],
    ),
    "non-UTF-8": (
        lambda p: (
            (p / "gold.jsonl").write_bytes(b'{"note_id": "n1", "task": "pulse", "label": "\xff"}\n')
            and p / "gold.jsonl"
        ),
        ["gold.jsonl line 1: not UTF-8 (byte 0xff at column 46)"],
    ),
    "empty file": (lambda p: write_jsonl(p / "gold.jsonl", ["", ""]), ["gold.jsonl: the file holds no annotations"]),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_annotation_file_is_refused_with_line_and_reason(ward, tmp_path, snapshot, case):
    make, expected = BAD[case]
    path = make(tmp_path)
    before = snapshot()
    with pytest.raises(CommandError) as info:
        call_command("import_annotations", str(path), "--corpus", "ward")
    message = str(info.value)
    assert message.startswith("nothing imported, ")
    for fragment in expected:
        assert fragment in message
    assert "Paziente" not in message
    assert snapshot() == before


def test_a_changed_annotation_is_refused_without_update(ward, tmp_path, snapshot):
    import_annotations(write_jsonl(tmp_path / "gold.jsonl", good_lines()), "ward")
    changed = good_lines()
    changed[1] = line("n1", task="heart-rate", label="normocardic", evidence=[])
    path = write_jsonl(tmp_path / "gold.jsonl", changed)
    before = snapshot()
    with pytest.raises(
        CommandError,
        match="line 2: note 'n1' already has a different 'heart-rate' annotation by "
        "'import:gold.jsonl'; use --update to replace it",
    ):
        call_command("import_annotations", str(path), "--corpus", "ward")
    assert snapshot() == before


def test_an_unknown_corpus_is_refused(ward, tmp_path, snapshot):
    path = write_jsonl(tmp_path / "gold.jsonl", good_lines())
    before = snapshot()
    with pytest.raises(CommandError, match="corpus 'icu' does not exist"):
        call_command("import_annotations", str(path), "--corpus", "icu")
    assert snapshot() == before


def test_the_synthetic_corpus_imports_with_its_gold_labels(db, tmp_path):
    from ml.synthetic import write_corpus

    call_command("load_task_catalog", stdout=StringIO())
    counts = write_corpus(tmp_path / "notes.jsonl", tmp_path / "gold.jsonl", 20, seed=3, language="it")
    call_command(
        "import_notes",
        str(tmp_path / "notes.jsonl"),
        "--corpus",
        "demo",
        "--create",
        "--language",
        "it",
        stdout=StringIO(),
    )
    report = import_annotations(tmp_path / "gold.jsonl", "demo")
    assert (report.created, report.problem_count) == (counts["annotations"], 0)
    assert Note.objects.filter(corpus__name="demo").count() == 20
