"""`python -m ml deidentify` on small JSONL files: offsets in the original text, tags and
surrogates, per-patient consistency, refusals, a bad line's error, and no value on stderr."""

import io
import json
import re

import pytest

from ml.__main__ import main

SECRET = "a-test-secret-of-enough-length"
NOTES = [
    {
        "id": "n1",
        "text": "Paziente ROSSI Mario, tel. 347 123 4567. FC 130, tachicardico. Controllo il 03/03/2024.",
        "patient_name": "Mario Rossi",
        "patient_id": "P1",
    },
    {
        "id": 2,
        "text": "Il sig. Mario Rossi torna il 10/03/2024, cartella RIC-123456. Visto dal Dott. Bianchi.",
        "metadata": {"patient_name": "Mario Rossi", "patient_id": "P1"},
    },
    {"id": "n3", "text": "Nessun dato identificativo: PA 120/80 mmHg.", "patient_name": None, "patient_id": "P2"},
]
VALUES = ["ROSSI", "Rossi", "Mario", "347 123 4567", "03/03/2024", "10/03/2024", "RIC-123456", "Bianchi"]


def write(path, records, extra_lines=()):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records) + "".join(extra_lines))
    return str(path)


def run(capsys, *args):
    code = main(["deidentify", *args])
    out, err = capsys.readouterr()
    return code, out, err


def lines(out):
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture
def notes(tmp_path):
    return write(tmp_path / "notes.jsonl", NOTES)


def test_tags_and_offsets_in_the_original_text(notes, capsys):
    code, out, err = run(
        capsys, notes, "--language", "it", "--known-field", "patient_name", "--record-pattern", r"RIC-\d{6}"
    )
    assert code == 0, err
    got = lines(out)
    assert [g["id"] for g in got] == ["n1", 2, "n3"]  # ids as given, input order
    originals = {n["id"]: n["text"] for n in NOTES}
    found = {}
    for g in got:
        for f in g["found"]:
            assert set(f) == {"type", "start", "end"}
            found.setdefault(g["id"], []).append((f["type"], originals[g["id"]][f["start"] : f["end"]]))
    assert ("NAME", "ROSSI Mario") in found["n1"]
    assert ("PHONE", "347 123 4567") in found["n1"] and ("DATE", "03/03/2024") in found["n1"]
    assert ("NAME", "Mario Rossi") in found[2] and ("RECORD_NUMBER", "RIC-123456") in found[2]
    assert ("NAME", "Bianchi") in found[2]  # a titled name
    assert "n3" not in found
    first = got[0]["text"]
    assert first.startswith("Paziente [NAME], tel. [PHONE]. FC 130, tachicardico. Controllo il [DATE].")
    assert got[2]["text"] == NOTES[2]["text"]
    for g in got:
        assert not any(v in g["text"] for v in VALUES)
    summary = json.loads(err.strip().splitlines()[-1])
    assert summary["notes"] == 3 and summary["notes_with_findings"] == 2
    assert summary["counts"]["NAME"] >= 3 and summary["counts"]["DATE"] == 2 and summary["mode"] == "tags"
    assert summary["seconds"] >= 0 and summary["findings"] == sum(len(g["found"]) for g in got)
    assert not any(v in err for v in VALUES)


def test_surrogates_need_a_secret(notes, capsys, monkeypatch):
    monkeypatch.delenv("DEID_SECRET", raising=False)
    code, out, err = run(capsys, notes, "--language", "it", "--surrogates")
    assert code == 2 and out == ""
    assert "DEID_SECRET" in err and "secret" in err
    monkeypatch.setenv("MY_KEY", "short")
    code, out, err = run(capsys, notes, "--language", "it", "--surrogates", "--secret-env", "MY_KEY")
    assert code == 2 and out == "" and "MY_KEY" in err and "too short" in err


def test_surrogates_consistent_per_patient(notes, capsys, monkeypatch):
    monkeypatch.setenv("DEID_SECRET", SECRET)
    args = [notes, "--language", "it", "--surrogates", "--known-field", "patient_name", "--patient-field", "patient_id"]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    one, two, three = lines(out)
    family, given = re.match(r"Paziente (\w+) (\w+), tel\.", one["text"]).groups()
    assert family.isupper() and family != "ROSSI" and given != "Mario"
    assert f"Il sig. {given} {family.title()} torna" in two["text"]  # one patient, one surrogate
    # the dates of one patient move together: 7 days apart before, 7 days apart after
    d1 = re.search(r"Controllo il (\d\d)/(\d\d)/(\d{4})", one["text"]).groups()
    d2 = re.search(r"torna il (\d\d)/(\d\d)/(\d{4})", two["text"]).groups()
    from datetime import date

    a, b = (date(int(y), int(m), int(d)) for d, m, y in (d1, d2))
    assert (b - a).days == 7 and a != date(2024, 3, 3)
    assert three["text"] == NOTES[2]["text"]
    # the same run again gives the same text; another secret another one
    assert run(capsys, *args)[1] == out
    monkeypatch.setenv("DEID_SECRET", SECRET + "-other")
    assert run(capsys, *args)[1] != out
    assert not any(v in err for v in VALUES)


def test_each_note_its_own_patient_without_patient_field(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DEID_SECRET", SECRET)
    text = "Paziente ROSSI Mario, visto il 03/03/2024."
    path = write(tmp_path / "n.jsonl", [{"id": i, "text": text, "patient_name": "Mario Rossi"} for i in range(6)])
    code, out, err = run(capsys, path, "--language", "it", "--surrogates", "--known-field", "patient_name")
    assert code == 0, err
    assert len({g["text"] for g in lines(out)}) > 1


@pytest.mark.parametrize(
    "extra, expected",
    [
        ('{"id": "x", "text": "ok"\n', "line 4: invalid JSON"),
        ('["not", "an", "object"]\n', "line 4: expected a JSON object, got an array"),
        ('{"id": "x"}\n', "line 4: 'text' must be a string, not missing or null"),
        ('{"id": "n1", "text": "again"}\n', "line 4: note id 'n1' appears twice"),
        ('{"id": true, "text": "x"}\n', "line 4: 'id' must be a non-empty string or an integer"),
        ('{"id": "y", "text": "x", "patient_name": {"given": "Mario Rossi"}}\n', "line 4: known field 'patient_name'"),
    ],
)
def test_a_bad_line_stops_everything(tmp_path, capsys, extra, expected):
    path = write(tmp_path / "bad.jsonl", NOTES, [extra, json.dumps({"id": "later", "text": "Sig. Verdi"}) + "\n"])
    code, out, err = run(capsys, path, "--language", "it", "--known-field", "patient_name")
    assert code == 2
    assert out == ""  # nothing written, also not the good notes before the bad line
    assert expected in err and "nothing written" in err
    assert "Mario Rossi" not in err  # a field is named, its value never shown


def test_patient_field_must_be_there(notes, capsys):
    code, out, err = run(capsys, notes, "--language", "it", "--patient-field", "mrn")
    assert code == 2 and out == "" and "line 1: the patient field 'mrn'" in err


def test_word_lists_patterns_and_stdin(tmp_path, capsys, monkeypatch):
    deny = tmp_path / "deny.txt"
    deny.write_text("# the ward's own words\nGirasole\n\n")
    text = "Reparto Girasole, pratica RIC-654321."
    monkeypatch.setattr(
        "sys.stdin", io.TextIOWrapper(io.BytesIO((json.dumps({"id": 1, "text": text}) + "\n").encode()))
    )
    code, out, err = run(
        capsys, "-", "--language", "it", "--deny-list", str(deny), "--record-pattern", r"\bRIC-\d{6}\b"
    )
    assert code == 0, err
    (got,) = lines(out)
    assert got["text"] == "Reparto [DENY_LIST], pratica [RECORD_NUMBER]."
    assert [(f["type"], text[f["start"] : f["end"]]) for f in got["found"]] == [
        ("DENY_LIST", "Girasole"),
        ("RECORD_NUMBER", "RIC-654321"),
    ]
    code, out, err = run(capsys, str(tmp_path / "n.jsonl"), "--language", "it", "--record-pattern", "RIC-(")
    assert code == 2 and "--record-pattern" in err and out == ""
    code, out, err = run(capsys, str(tmp_path / "missing.jsonl"), "--language", "it", "--allow-list", "/nonexistent")
    assert code == 2 and "--allow-list" in err


def test_missing_file(tmp_path, capsys):
    code, out, err = run(capsys, str(tmp_path / "missing.jsonl"), "--language", "en")
    assert code == 2 and out == "" and "cannot open" in err
