"""The synthetic ED corpus: determinism, evidence spans, labels that follow from the text, files, CLI."""

import itertools
import json
import re

import pytest

from ml.__main__ import main
from ml.catalog import catalog_index, load_catalog
from ml.synthetic import GOLD_TASKS, UNKNOWN, GoldAnnotation, SyntheticNote, generate_notes, make_note, write_corpus

CATALOG = catalog_index(load_catalog())
NEGATION_START = ("nega", "non ", "no ", "denies", "not ", "senza", "nessun", "w/o", "astemi", "doesn't")


@pytest.fixture(scope="module")
def notes():
    return list(generate_notes(400, seed=7, language="mixed"))


def spans(notes, task):
    """(note, label, evidence text) for every written evidence span of a task."""
    for note in notes:
        for ann in note.annotations:
            if ann.task == task:
                for start, end in ann.evidence:
                    yield note, ann.label, note.text[start:end]


def numbers(text):
    return [float(x.replace(",", ".")) for x in re.findall(r"\d+(?:[.,]\d+)?", text)]


def test_the_same_seed_gives_the_same_notes():
    assert list(generate_notes(30, seed=3, language="mixed")) == list(generate_notes(30, seed=3, language="mixed"))


def test_different_seeds_give_different_notes():
    first = [n.text for n in generate_notes(30, seed=1)]
    second = [n.text for n in generate_notes(30, seed=2)]
    assert not set(first) & set(second)


def test_start_reproduces_the_same_notes():
    whole = list(generate_notes(20, seed=5, language="mixed"))
    assert list(generate_notes(8, seed=5, language="mixed", start=12)) == whole[12:]
    assert make_note(15, seed=5, language="mixed") == whole[15]


def test_generation_streams_one_note_at_a_time():
    stream = generate_notes(10**9, seed=0)
    first_three = list(itertools.islice(stream, 3))
    assert [n.id for n in first_three] == ["syn-0-0000000", "syn-0-0000001", "syn-0-0000002"]


def test_notes_have_ids_metadata_and_one_annotation_per_gold_task(notes):
    assert len({n.id for n in notes}) == len(notes)
    for note in notes:
        assert isinstance(note, SyntheticNote) and note.text.strip()
        assert note.metadata["language"] == note.language and note.metadata["synthetic"] is True
        assert [a.task for a in note.annotations] == list(GOLD_TASKS)
        assert all(isinstance(a, GoldAnnotation) for a in note.annotations)


def test_at_least_twelve_catalog_tasks_have_gold_labels(notes):
    labelled = {a.task for n in notes for a in n.annotations if a.label != UNKNOWN}
    assert len(labelled) >= 12
    assert set(GOLD_TASKS) == labelled  # every gold task gets a non-unknown label somewhere in 400 notes


def test_every_label_is_an_option_of_its_catalog_task(notes):
    for note in notes:
        for ann in note.annotations:
            assert ann.label in CATALOG[ann.task].options
            assert ann.description == CATALOG[ann.task].description


def test_every_span_lies_inside_the_text_and_starts_and_ends_on_words(notes):
    for note in notes:
        for ann in note.annotations:
            for start, end in ann.evidence:
                assert 0 <= start < end <= len(note.text)
                piece = note.text[start:end]
                assert piece == piece.strip()
                assert start == 0 or not note.text[start - 1].isalnum()
                assert end == len(note.text) or not note.text[end].isalnum()


def test_unknown_means_no_evidence_and_a_label_means_some(notes):
    for note in notes:
        for ann in note.annotations:
            assert (ann.label == UNKNOWN) == (not ann.evidence)


def test_heart_rate_label_follows_from_the_written_value(notes):
    found = set()
    for _, label, text in spans(notes, "heart-rate"):
        [value] = numbers(text)
        expected = "bradycardic" if value < 60 else "tachycardic" if value > 100 else "normocardic"
        assert label == expected, text
        assert re.match(r"(FC|fc|HR|pulse|P)\b", text)
        found.add(label)
    assert found == {"bradycardic", "normocardic", "tachycardic"}


def test_blood_pressure_label_follows_from_the_written_values(notes):
    for _, label, text in spans(notes, "blood-pressure"):
        systolic, diastolic = map(int, re.search(r"(\d+)/(\d+)", text).groups())
        if systolic < 90:
            expected = "hypotensive"
        elif systolic >= 140 or diastolic >= 90:
            expected = "hypertensive"
        else:
            expected = "normotensive"
        assert label == expected, text


def test_temperature_label_follows_from_the_written_value_in_celsius_or_fahrenheit(notes):
    units = set()
    for _, label, text in spans(notes, "body-temperature"):
        [value] = numbers(text)
        if value > 50:
            units.add("F")
            value = (value - 32) * 5 / 9
        expected = "hypothermic" if value < 35.5 else "hyperthermic" if value >= 38 else "normothermic"
        assert label == expected, text
    assert "F" in units


def test_respiratory_rate_label_follows_from_the_written_value(notes):
    for _, label, text in spans(notes, "respiratory-rate"):
        [value] = numbers(text)
        expected = "bradypneic" if value < 10 else "tachypneic" if value > 22 else "eupneic"
        assert label == expected, text


def test_measured_labels_point_at_a_written_value(notes):
    for task in ("spo2", "hemoglobin", "troponin", "inr", "blood-alcohol", "d-dimer", "creatinine"):
        for _, label, text in spans(notes, task):
            assert label == "measured" and numbers(text), (task, text)
    for _, _, text in spans(notes, "spo2"):
        assert "%" in text


def test_consciousness_label_matches_the_words(notes):
    cues = {"A": ("vigile", "alert", "A&O", "GCS 15"), "V": ("chiamata", "verbal", "voice"), "P": ("dolor", "pain")}
    for _, label, text in spans(notes, "level-of-consciousness"):
        assert any(cue in text for cue in cues[label]), (label, text)


def test_negative_labels_are_written_as_negations_and_positive_ones_are_not(notes):
    for task in (
        "chest-pain",
        "presence-of-dyspnea",
        "history-of-alcohol-abuse",
        "presence-of-pacemaker",
        "known-history-of-epilepsy",
        "tongue-bite",
        "history-of-allergy",
        "presence-of-prodromal-symptoms",
        "anticoagulants-or-antiplatelet-drug-therapy",
        "antiepileptic-therapy-already-in-place",
        "head-or-other-districts-trauma",
    ):
        for _, label, text in spans(notes, task):
            negated = text.lower().startswith(NEGATION_START) or text in ("NKDA", "Allergie: nega", "Allergies: none")
            assert negated == (label == "n"), (task, label, text)


def test_chronic_condition_labels_follow_the_certainty_words(notes):
    for task in ("chronic-cardiac-failure", "chronic-renal-failure"):
        for _, label, text in spans(notes, task):
            lowered = text.lower()
            possible = any(cue in lowered for cue in ("sospett", "probabil", "possible", "probable", "?"))
            negated = lowered.startswith(NEGATION_START)
            expected = "possibly chronic" if possible else "certainly not chronic" if negated else "certainly chronic"
            assert label == expected, (task, text)


def test_dialysis_is_stated_with_chronic_renal_failure(notes):
    for note in notes:
        labels = {a.task: a.label for a in note.annotations}
        if labels["chronic-dialysis"] != UNKNOWN:
            assert labels["chronic-renal-failure"] == "certainly chronic"


def test_concussion_and_unconsciousness_labels_follow_the_words(notes):
    for _, label, text in spans(notes, "concussive-head-trauma"):
        concussive = "non commotivo" not in text and (
            "commotivo" in text or "con PdC" in text or "with LOC" in text or "w/ LOC" in text
        )
        assert (label == "y") == concussive, text
    for _, label, text in spans(notes, "duration-of-the-patients-unconsciousness"):
        short = any(cue in text for cue in ("secondi", "sec", "breve", "brief", "few seconds"))
        assert (label == "short") == short, text


def test_a_normal_ecg_is_only_written_with_a_normal_heart_rate(notes):
    for note in notes:
        labels = {a.task: a.label for a in note.annotations}
        if labels["ecg-any-abnormality"] == "n":
            assert labels["heart-rate"] == "normocardic"


def test_italian_and_english_notes_are_written_in_their_language():
    italian = list(generate_notes(50, seed=2, language="it", typo_rate=0))
    english = list(generate_notes(50, seed=2, language="en", typo_rate=0))
    assert all(n.language == "it" and re.search(r"\d+ ?(aa\b|anni|enne)", n.text) for n in italian)
    assert all(n.language == "en" and re.search(r"\d+ ?(y/o|yo)\b", n.text) for n in english)
    assert not any(re.search(r"\d+ ?(y/o|yo)\b", n.text) for n in italian)


def test_mixed_gives_both_languages(notes):
    counts = {lang: sum(n.language == lang for n in notes) for lang in ("it", "en")}
    assert counts["it"] > 120 and counts["en"] > 120


def test_typos_change_plain_text_but_never_the_evidence():
    clean = list(generate_notes(60, seed=4, language="mixed", typo_rate=0))
    typed = list(generate_notes(60, seed=4, language="mixed", typo_rate=0.1))
    changed = 0
    for a, b in zip(clean, typed):
        changed += a.text != b.text
        assert [x.label for x in a.annotations] == [x.label for x in b.annotations]
        for x, y in zip(a.annotations, b.annotations):
            assert [a.text[s:e] for s, e in x.evidence] == [b.text[s:e] for s, e in y.evidence]
    assert changed > 50


def test_note_length_follows_the_word_bounds():
    words = [n.metadata["words"] for n in generate_notes(300, seed=9, language="mixed")]
    assert min(words) >= 80 and max(words) <= 600
    assert max(words) > 300  # the range is used, not only short notes
    long_words = [len(n.text.split()) for n in generate_notes(40, seed=9, min_words=300, max_words=400)]
    assert min(long_words) >= 300 and max(long_words) <= 400


@pytest.mark.parametrize(
    "kwargs", [{"language": "fr"}, {"seed": -1}, {"typo_rate": 0.9}, {"min_words": 500, "max_words": 100}]
)
def test_it_refuses_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        next(generate_notes(1, **kwargs))


def test_write_corpus_writes_the_two_jsonl_files_the_app_imports(tmp_path):
    notes_path, annotations_path = tmp_path / "notes.jsonl", tmp_path / "annotations.jsonl"
    stats = write_corpus(notes_path, annotations_path, 25, seed=1, language="mixed")
    rows = [json.loads(line) for line in notes_path.read_text(encoding="utf-8").splitlines()]
    annotations = [json.loads(line) for line in annotations_path.read_text(encoding="utf-8").splitlines()]
    assert stats["notes"] == len(rows) == 25 and stats["annotations"] == len(annotations) == 25 * len(GOLD_TASKS)
    assert all(set(row) == {"id", "text", "metadata"} for row in rows)
    texts = {row["id"]: row["text"] for row in rows}
    expected = {n.id: n for n in generate_notes(25, seed=1, language="mixed")}
    assert texts == {i: n.text for i, n in expected.items()}
    for ann in annotations:
        assert set(ann) == {"note_id", "task", "label", "evidence"}
        assert ann["label"] in CATALOG[ann["task"]].options
        for start, end in ann["evidence"]:
            assert 0 <= start < end <= len(texts[ann["note_id"]])
    assert annotations[0] == {
        "note_id": rows[0]["id"],
        "task": GOLD_TASKS[0],
        "label": expected[rows[0]["id"]].annotations[0].label,
        "evidence": [list(span) for span in expected[rows[0]["id"]].annotations[0].evidence],
    }


def test_write_corpus_can_leave_out_unknown_labels(tmp_path):
    write_corpus(tmp_path / "n.jsonl", tmp_path / "a.jsonl", 10, include_unknown=False)
    labels = [json.loads(line)["label"] for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert labels and UNKNOWN not in labels


def test_the_cli_writes_a_corpus(tmp_path, capsys):
    notes_path, annotations_path = tmp_path / "notes.jsonl", tmp_path / "ann.jsonl"
    code = main(
        [
            "synth",
            "--n",
            "12",
            "--seed",
            "3",
            "--language",
            "it",
            "--start",
            "5",
            "--notes-out",
            str(notes_path),
            "--annotations-out",
            str(annotations_path),
        ]
    )
    assert code == 0
    rows = [json.loads(line) for line in notes_path.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [f"syn-3-{i:07d}" for i in range(5, 17)]
    assert all(r["metadata"]["language"] == "it" for r in rows)
    assert "wrote 12 notes" in capsys.readouterr().out


def test_the_cli_reports_a_bad_value_without_a_traceback(tmp_path, capsys):
    code = main(
        [
            "synth",
            "--n",
            "1",
            "--typo-rate",
            "2",
            "--notes-out",
            str(tmp_path / "n"),
            "--annotations-out",
            str(tmp_path / "a"),
        ]
    )
    assert code == 2
    assert "typo_rate" in capsys.readouterr().err
