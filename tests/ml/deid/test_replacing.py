"""ml.deid.replacing: tags and surrogates, consistency per patient, date intervals, offset mapping."""

import re
from datetime import date

import pytest
from stdnum.it import codicefiscale as std_cf

from ml.deid.dates import parse_date
from ml.deid.replacing import Replacer
from ml.deid.surrogates import FAMILY, GIVEN_MALE, date_shift_days
from ml.deid.types import Finding

SECRET = b"a test secret of thirty-two bytes"


def finding(text, value, type_, canonical="", nth=0):
    start = -1
    for _ in range(nth + 1):
        start = text.index(value, start + 1)
    return Finding(type_, start, start + len(value), canonical=canonical)


def names(text, *values, canonical="mario rossi"):
    return [finding(text, v, "NAME", canonical) for v in values]


@pytest.fixture
def surrogates():
    return Replacer("surrogates", "it", SECRET)


# --- tags ----------------------------------------------------------------------------------------


def test_tags_mode_writes_the_type():
    text = "Sig. Mario Rossi, tel. 347 1234567, visto il 3 marzo 2024."
    found = [*names(text, "Mario Rossi"), finding(text, "347 1234567", "PHONE"), finding(text, "3 marzo 2024", "DATE")]
    done = Replacer("tags", "it").replace(text, found)
    assert done.text == "Sig. [NAME], tel. [PHONE], visto il [DATE]."
    assert done.counts == {"NAME": 1, "PHONE": 1, "DATE": 1}
    assert [(s.start, s.end) for s in done.spans] == [(f.start, f.end) for f in found]
    for span in done.spans:
        assert done.text[span.new_start : span.new_end] == f"[{span.type}]"


def test_tags_again_change_nothing():
    text = "Paziente [NAME], nata il [DATE]."
    found = [finding(text, "[NAME]", "NAME"), finding(text, "[DATE]", "DATE")]
    done = Replacer("tags", "it").replace(text, found)
    assert done.text == text and done.spans == [] and done.counts == {}


# --- names ---------------------------------------------------------------------------------------


def test_name_variants_share_their_tokens_surrogates(surrogates):
    text = "ROSSI Mario, 80 anni. Il paziente Mario Rossi (M. Rossi) riferisce... Rossi M. dimesso; rossi mario."
    found = names(text, "ROSSI Mario", "Mario Rossi", "M. Rossi", "Rossi M.", "rossi mario")
    done = surrogates.replace(text, found, patient="P1")
    first = done.text[done.spans[0].new_start : done.spans[0].new_end]
    family, given = first.split()
    assert family.isupper() and family.title() in FAMILY["it"] and family != "ROSSI"
    assert given in GIVEN_MALE["it"] and given != "Mario"
    surname = family.title()
    assert f"{given} {surname} ({given[0]}. {surname})" in done.text
    assert f"{surname} {given[0]}. dimesso; {surname.lower()} {given.lower()}." in done.text
    assert "Rossi" not in done.text and "Mario" not in done.text


def test_one_patient_one_surrogate_across_notes_and_a_titled_mention(surrogates):
    note1 = "Paziente: Rossi Mario. Dimesso."
    note2 = "Controllo. Il Dott. Bianchi visita il Sig. Rossi, poi Mario Rossi firma."
    one = surrogates.replace(note1, names(note1, "Rossi Mario"), patient="P1")
    found2 = [
        finding(note2, "Bianchi", "NAME"),  # a titled name, no canonical identity
        finding(note2, "Rossi", "NAME"),  # titled mention of the patient: keyed by its own token
        *names(note2, "Mario Rossi"),
    ]
    two = surrogates.replace(note2, found2, patient="P1")
    surname, given = one.text.removeprefix("Paziente: ").removesuffix(". Dimesso.").split()
    assert f"il Sig. {surname}, poi {given} {surname} firma." in two.text
    again = surrogates.replace(note2, found2, patient="P1")
    assert again.text == two.text  # deterministic


def test_different_patients_get_different_surrogates(surrogates):
    text = "Paziente Rossi Mario, CF RSSMRA80A01H501U, tel. 347 1234567."
    found = [
        *names(text, "Rossi Mario"),
        finding(text, "RSSMRA80A01H501U", "CODICE_FISCALE"),
        finding(text, "347 1234567", "PHONE"),
    ]
    texts = {surrogates.replace(text, found, patient=p).text for p in ("P1", "P2", "P3", "P4")}
    assert len(texts) == 4
    pieces = [re.findall(r"CF (\w+), tel\. ([\d ]+)\.", t)[0] for t in texts]
    assert len({cf for cf, _ in pieces}) == 4 and len({tel for _, tel in pieces}) == 4
    assert all(std_cf.is_valid(cf) for cf, _ in pieces)


def test_another_secret_gives_other_surrogates():
    text = "Paziente Rossi Mario."
    found = names(text, "Rossi Mario")
    a = Replacer("surrogates", "it", SECRET).replace(text, found, "P1").text
    b = Replacer("surrogates", "it", b"another secret").replace(text, found, "P1").text
    assert a != b


def test_titles_particles_and_gender(surrogates):
    text = "La Sig.ra Maria De Luca e il Dott. Bianchi."
    found = [
        finding(text, "Sig.ra Maria De Luca", "NAME", "maria de luca"),
        finding(text, "Dott. Bianchi", "NAME"),
    ]
    done = surrogates.replace(text, found, patient="P1")
    match = re.fullmatch(r"La Sig\.ra (\w+) De (\w+) e il Dott\. (\w+)\.", done.text)
    assert match, done.text
    given, after_de, doctor = match.groups()
    assert given not in GIVEN_MALE["it"] and given != "Maria"  # a woman's name for a woman's
    assert after_de in FAMILY["it"]  # "Luca" after "De" is a family name here
    assert doctor in FAMILY["it"] and doctor != "Bianchi"


def test_english_possessive_kept():
    text = "Mr Smith's wife called."
    done = Replacer("surrogates", "en", SECRET).replace(text, [finding(text, "Mr Smith's", "NAME")], "P1")
    assert re.fullmatch(r"Mr [A-Z][a-z]+'s wife called\.", done.text) and "Smith" not in done.text


# --- dates and ages ------------------------------------------------------------------------------


def test_dates_shift_by_one_offset_per_patient(surrogates):
    notes = [
        "Ricovero il 3 marzo 2024, dimissione il 10/03/2024.",
        "Controllo del 2024-04-15; nato il 1° gennaio 1950.",
    ]
    originals, shifted = [], []
    for text in notes:
        spans = [m.span() for m in re.finditer(r"\d+[°]? \w+ \d{4}|\d\d/\d\d/\d{4}|\d{4}-\d\d-\d\d", text)]
        found = [Finding("DATE", a, b) for a, b in spans]
        done = surrogates.replace(text, found, patient="P7")
        originals += [parse_date(text[a:b], "it").value for a, b in spans]
        shifted += [parse_date(done.text[s.new_start : s.new_end], "it").value for s in done.spans]
    shift = date_shift_days(SECRET, "P7")
    assert 30 <= abs(shift) <= 365
    assert [(b - a).days for a, b in zip(originals, shifted)] == [shift] * 4
    # intervals between the patient's dates hold
    assert [(d - originals[0]).days for d in originals] == [(d - shifted[0]).days for d in shifted]
    other = Replacer("surrogates", "it", SECRET).replace(notes[0], [Finding("DATE", 12, 24)], patient="P8")
    assert other.text != surrogates.replace(notes[0], [Finding("DATE", 12, 24)], patient="P7").text


def test_date_keeps_its_shape(surrogates):
    text = "Visto il 03/03/24 e il 3 Marzo 2024."
    found = [finding(text, "03/03/24", "DATE"), finding(text, "3 Marzo 2024", "DATE")]
    done = surrogates.replace(text, found, patient="P1")
    assert re.fullmatch(r"Visto il \d\d/\d\d/\d\d e il \d{1,2} [A-Z][a-z]+ \d{4}\.", done.text), done.text
    assert parse_date(done.text[done.spans[1].new_start : done.spans[1].new_end], "it").value != date(2024, 3, 3)


def test_unparsable_date_becomes_a_tag(surrogates):
    text = "Ricovero la scorsa Pasqua."
    done = surrogates.replace(text, [finding(text, "la scorsa Pasqua", "DATE")], patient="P1")
    assert done.text == "Ricovero [DATE]."


@pytest.mark.parametrize(
    "text, value, expected",
    [
        ("Donna di 92 anni.", "92 anni", "Donna di 90+ anni."),
        ("A 95-year-old man.", "95", "A 90+-year-old man."),
        ("Edad: 101 años.", "101 años", "Edad: 90+ años."),
        ("Donna di 85 anni.", "85 anni", "Donna di 85 anni."),  # under 90: kept
        ("Età 90+ anni.", "90", "Età 90+ anni."),  # a second pass: unchanged
        ("Età 90+ anni.", "90+", "Età 90+ anni."),
    ],
)
def test_ages_over_89(surrogates, text, value, expected):
    assert surrogates.replace(text, [finding(text, value, "AGE")], "P1").text == expected


def test_age_tag():
    text = "Donna di 92 anni, sorella di 85 anni."
    found = [finding(text, "92", "AGE"), finding(text, "85", "AGE")]
    assert Replacer("tags", "it").replace(text, found).text == "Donna di [AGE] anni, sorella di 85 anni."


# --- offsets -------------------------------------------------------------------------------------


def offsets_case():
    text = "Paziente Mario Rossi con tachicardia, FC 130. Tel. 347 1234567 ore 10."
    found = [*names(text, "Mario Rossi"), finding(text, "347 1234567", "PHONE")]
    return text, Replacer("tags", "it").replace(text, found)


def test_map_span_after_an_identifier_moves():
    text, done = offsets_case()
    start = text.index("tachicardia")
    new = done.map_span(start, start + len("tachicardia"))
    assert done.text[slice(*new)] == "tachicardia"
    start = text.index("FC 130")
    assert done.text[slice(*done.map_span(start, start + 6))] == "FC 130"
    end = len(text)
    assert done.map_span(end, end) == (len(done.text), len(done.text))


def test_map_span_around_or_into_an_identifier_covers_it():
    text, done = offsets_case()
    around = (text.index("Paziente"), text.index(" con"))
    assert done.text[slice(*done.map_span(*around))] == "Paziente [NAME]"
    partial = (text.index("Rossi"), text.index("tachicardia") + 4)  # starts inside the name
    assert done.text[slice(*done.map_span(*partial))] == "[NAME] con tach"
    inside = (text.index("Rossi"), text.index("Rossi") + 3)
    assert done.text[slice(*done.map_span(*inside))] == "[NAME]"
    end_inside = (text.index("Tel."), text.index("1234567"))
    assert done.text[slice(*done.map_span(*end_inside))] == "Tel. [PHONE]"
    before = (0, text.index("Mario"))  # ends where the replacement starts: does not take it in
    assert done.text[slice(*done.map_span(*before))] == "Paziente "
    with pytest.raises(ValueError):
        done.map_span(5, 4)


def test_map_offset():
    text, done = offsets_case()
    name = done.spans[0]
    assert done.map_offset(0) == 0
    assert done.map_offset(name.start) == name.new_start
    assert done.map_offset(name.start + 2) == name.new_start
    assert done.map_offset(name.start + 2, end=True) == name.new_end
    assert done.map_offset(name.end) == name.new_end
    after = text.index("ore")
    assert done.text[done.map_offset(after) :].startswith("ore 10.")


def test_surrogate_offsets_too(surrogates):
    text = "Il paziente Mario Rossi ha FC 130. Nato il 3 marzo 1950."
    found = [*names(text, "Mario Rossi"), finding(text, "3 marzo 1950", "DATE")]
    done = surrogates.replace(text, found, patient="P1")
    start = text.index("FC 130")
    assert done.text[slice(*done.map_span(start, start + 6))] == "FC 130"
    for span in done.spans:
        assert done.map_span(span.start, span.end) == (span.new_start, span.new_end)
    assert done.text.endswith(".") and done.map_span(len(text) - 1, len(text)) == (len(done.text) - 1, len(done.text))


# --- safety --------------------------------------------------------------------------------------


def test_repr_and_str_hold_no_value(surrogates):
    text = "Paziente Mario Rossi, tel. 347 1234567."
    done = surrogates.replace(text, [*names(text, "Mario Rossi"), finding(text, "347 1234567", "PHONE")], "P1")
    assert ("Mario Rossi", done.text[done.spans[0].new_start : done.spans[0].new_end]) in done.pairs
    for shown in (repr(done), str(done), f"{done}", repr([done])):
        assert "Rossi" not in shown and "347" not in shown
        assert done.text[done.spans[0].new_start : done.spans[0].new_end] not in shown


def test_second_pass_keeps_consistency(surrogates):
    """De-identifying an already de-identified note again (e.g. a missed name marked later) keeps
    every surrogate consistent: the same text for the same patient, dates moved together."""
    text = "Sig. Mario Rossi visto il 3 marzo 2024 e il 10 marzo 2024."
    found = [*names(text, "Mario Rossi"), finding(text, "3 marzo 2024", "DATE"), finding(text, "10 marzo 2024", "DATE")]
    first = surrogates.replace(text, found, "P1")
    spans = [(s.new_start, s.new_end, s.type) for s in first.spans]
    second_found = [Finding(t, a, b) for a, b, t in spans]
    second = surrogates.replace(first.text, second_found, "P1")
    again = surrogates.replace(first.text, second_found, "P1")
    assert second.text == again.text
    d = [parse_date(second.text[s.new_start : s.new_end], "it").value for s in second.spans if s.type == "DATE"]
    assert (d[1] - d[0]).days == 7
    # a surrogate found again is replaced by the patient's one surrogate of it, in every note
    name = first.text[spans[0][0] : spans[0][1]]
    name_again = second.text[second.spans[0].new_start : second.spans[0].new_end]
    other = f"Altra nota: {name}."
    elsewhere = surrogates.replace(other, [Finding("NAME", 12, 12 + len(name))], "P1")
    assert elsewhere.text == f"Altra nota: {name_again}."


def test_overlapping_and_bad_findings(surrogates):
    text = "Tel. 347 1234567."
    overlapping = [Finding("PHONE", 5, 12), Finding("PHONE", 9, 16)]
    done = Replacer("tags", "it").replace(text, overlapping)
    assert done.text == "Tel. [PHONE]." and len(done.spans) == 1
    with pytest.raises(ValueError, match="outside"):
        surrogates.replace(text, [Finding("PHONE", 5, 99)], "P1")


def test_deny_list_and_unknown_modes():
    text = "Reparto Girasole."
    done = Replacer("surrogates", "it", SECRET).replace(text, [finding(text, "Girasole", "DENY_LIST")], "P1")
    assert done.text == "Reparto [DENY_LIST]."
    with pytest.raises(ValueError, match="secret"):
        Replacer("surrogates", "it")
    with pytest.raises(ValueError, match="mode"):
        Replacer("masks", "it")
    with pytest.raises(ValueError, match="language"):
        Replacer("tags", "fr")
