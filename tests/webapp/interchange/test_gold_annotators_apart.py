"""Two annotators' files of the same notes import as two annotators' gold (corpus.gold), and the
review report's span agreement (webapp.review.report_store) compares them."""

import pytest

from tests.webapp.interchange.conftest import TEXTS
from webapp.corpus.gold import import_gold
from webapp.corpus.models import Annotation
from webapp.review import report_store

N1 = TEXTS["n1"]  # "Pt 😀 reports fever and chest pain. HR 120."
MAP = ["TACHY=heart-rate:tachycardic", "SYMPTOM=fever:present"]


def _brat(folder, lines):
    folder.mkdir()
    (folder / "n1.txt").write_text(N1, encoding="utf-8")
    (folder / "n1.ann").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return folder


def _entity(n, label, word):
    start = N1.index(word)
    return f"T{n}\t{label} {start} {start + len(word)}\t{word}"


def test_each_files_annotator_stays_apart_and_their_spans_are_compared(ward, tasks, tmp_path):
    first = _brat(tmp_path / "ann", [_entity(1, "TACHY", "HR 120"), _entity(2, "SYMPTOM", "fever")])
    second = _brat(tmp_path / "bob", [_entity(1, "TACHY", "120"), _entity(2, "SYMPTOM", "fever")])
    assert import_gold(first, "ward", fmt="brat", mapping=MAP, annotator="ann").ok
    assert import_gold(second, "ward", fmt="brat", mapping=MAP, annotator="bob").ok
    rows = sorted(
        Annotation.objects.filter(note__external_id="n1").values_list("task__slug", "annotator_name", "evidence")
    )
    hr, twelve, fever = N1.index("HR 120"), N1.index("120"), N1.index("fever")
    assert rows == [
        ("fever", "ann", [[fever, fever + 5]]),
        ("fever", "bob", [[fever, fever + 5]]),
        ("heart-rate", "ann", [[hr, hr + 6]]),
        ("heart-rate", "bob", [[twelve, twelve + 3]]),
    ]
    result = report_store.gold_span_agreement(Annotation.objects.all())
    # heart rate: "HR 120" against "120" overlaps but is no exact match; fever matches exactly
    assert result["per_label"]["heart-rate"]["f1_exact"] == 0
    assert result["per_label"]["heart-rate"]["f1_overlap"] == 1
    assert result["per_label"]["fever"]["f1_exact"] == 1
    assert result["f1_exact"] == pytest.approx(0.5) and result["f1_overlap"] == 1
    assert result["annotators"] == 2 and result["paired_documents"] == 2
    assert result["pairs"][0]["first"] == "ann" and result["pairs"][0]["second"] == "bob"
    # tokens: "HR" is heart rate for ann only, every other token agrees (fever, 120 and "O")
    assert result["alpha_tokens"] is not None and result["alpha_tokens"] < 1


def test_one_annotator_gives_no_span_agreement(ward, tasks, tmp_path):
    first = _brat(tmp_path / "ann", [_entity(1, "TACHY", "HR 120")])
    assert import_gold(first, "ward", fmt="brat", mapping=MAP, annotator="ann").ok
    assert report_store.gold_span_agreement(Annotation.objects.all()) is None
