"""ml.deid.dates: dates found in it/es/en text, parsed, and written back in the same shape."""

from __future__ import annotations

import datetime as dt

import pytest

from ml.deid.dates import PLACEHOLDER_YEAR, find_dates, parse_date

D = dt.date

# (language, text, value, shifted by 19 days)
SAMPLES = [
    ("it", "3 marzo 2024", D(2024, 3, 3), "22 marzo 2024"),
    ("it", "03/03/24", D(2024, 3, 3), "22/03/24"),
    ("it", "3/3/2024", D(2024, 3, 3), "22/3/2024"),
    ("it", "03.03.2024", D(2024, 3, 3), "22.03.2024"),
    ("it", "2024-03-03", D(2024, 3, 3), "2024-03-22"),
    ("it", "1° MARZO 2024", D(2024, 3, 1), "20 MARZO 2024"),
    ("it", "15 Gen. 2025", D(2025, 1, 15), "3 Feb. 2025"),
    ("it", "28 dicembre 2023", D(2023, 12, 28), "16 gennaio 2024"),
    ("it", "12/10/2023", D(2023, 10, 12), "31/10/2023"),
    ("it", "12/3/2023", D(2023, 3, 12), "31/3/2023"),
    ("it", "3 marzo", D(PLACEHOLDER_YEAR, 3, 3), "22 marzo"),
    ("es", "12 de enero de 2023", D(2023, 1, 12), "31 de enero de 2023"),
    ("es", "3 de sept. de 2021", D(2021, 9, 3), "22 de sept. de 2021"),
    ("es", "03-Mar-2024", D(2024, 3, 3), "22-Mar-2024"),
    ("es", "15 de Diciembre de 2023", D(2023, 12, 15), "3 de Enero de 2024"),
    ("es", "1º de enero", D(PLACEHOLDER_YEAR, 1, 1), "20 de enero"),
    ("es", "03/03/2024", D(2024, 3, 3), "22/03/2024"),
    ("en", "March 3, 2024", D(2024, 3, 3), "March 22, 2024"),
    ("en", "3rd March 2024", D(2024, 3, 3), "22nd March 2024"),
    ("en", "3rd of March, 2024", D(2024, 3, 3), "22nd of March, 2024"),
    ("en", "Mar 3rd 2024", D(2024, 3, 3), "Mar 22nd 2024"),
    ("en", "SEPT 1ST 2024", D(2024, 9, 1), "SEPT 20TH 2024"),
    ("en", "12/25/2024", D(2024, 12, 25), "01/13/2025"),  # month-first when the day says so
    ("en", "3/3/2024", D(2024, 3, 3), "22/3/2024"),  # day-first otherwise (UK notes)
    ("en", "May 3rd", D(PLACEHOLDER_YEAR, 5, 3), "May 22nd"),
]


@pytest.mark.parametrize("language,text,value,shifted", SAMPLES)
def test_parse_and_render_round_trip(language, text, value, shifted):
    parsed = parse_date(text, language)
    assert parsed is not None, text
    assert parsed.value == value
    assert parsed.render(parsed.value) == text  # the same date is written exactly as it was
    new = value + dt.timedelta(days=19)
    assert parsed.render(new) == shifted
    again = parse_date(shifted, language)
    assert again is not None and again.value == new


@pytest.mark.parametrize(
    "language,text,value,shifted",
    [
        ("it", "marzo 2024", D(2024, 3, 1), "maggio 2024"),
        ("it", "Marzo 2024", D(2024, 3, 1), "Maggio 2024"),
        ("it", "03/2024", D(2024, 3, 1), "05/2024"),
        ("es", "enero de 2023", D(2023, 1, 1), "marzo de 2023"),
        ("en", "March 2024", D(2024, 3, 1), "May 2024"),
        ("en", "Sep 2024", D(2024, 9, 1), "Nov 2024"),
    ],
)
def test_month_year_is_the_first_and_renders_the_month(language, text, value, shifted):
    parsed = parse_date(text, language)
    assert parsed is not None and parsed.value == value and not parsed.has_day
    assert parsed.render(value) == text
    assert parsed.render(D(value.year, value.month + 2, 17)) == shifted


def test_two_digit_years_and_padding():
    assert parse_date("03/03/45", "it").value == D(1945, 3, 3)
    assert parse_date("03/03/24", "it").render(D(1999, 1, 9)) == "09/01/99"
    assert parse_date("3/3/24", "it").render(D(2031, 11, 25)) == "25/11/31"
    assert parse_date("3/3/2024", "it").render(D(2031, 1, 5)) == "5/1/2031"


def test_blanks_around_are_kept():
    parsed = parse_date(" 3 marzo 2024 ", "it")
    assert parsed.value == D(2024, 3, 3)
    assert parsed.render(D(2024, 4, 1)) == " 1 aprile 2024 "


def test_find_dates_in_a_note_per_language():
    it = "Ricoverata il 3 marzo 2024, dimessa il 07/03/24. Controllo a maggio 2024 (visita del 2024-05-10)."
    assert [it[s:e] for s, e in find_dates(it, "it")] == ["3 marzo 2024", "07/03/24", "maggio 2024", "2024-05-10"]
    es = "Ingresó el 12 de enero de 2023; alta el 15/01/2023. Revisión en febrero de 2023."
    assert [es[s:e] for s, e in find_dates(es, "es")] == ["12 de enero de 2023", "15/01/2023", "febrero de 2023"]
    en = "Admitted on March 3, 2024; seen again 3rd April 2024 and on 2024-04-10. Follow-up in May 2024."
    assert [en[s:e] for s, e in find_dates(en, "en")] == ["March 3, 2024", "3rd April 2024", "2024-04-10", "May 2024"]


def test_spans_are_sorted_non_overlapping_and_longest():
    text = "dal 01/03/2024-05/03/2024, poi 3 marzo 2024"
    spans = find_dates(text, "it")
    assert [text[s:e] for s, e in spans] == ["01/03/2024", "05/03/2024", "3 marzo 2024"]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize(
    "language,text",
    [
        ("it", "IP 10.1.1.12"),
        ("it", "tel. 06-12-34-56"),
        ("it", "32/13/2024"),
        ("it", "31/02/2024"),  # no 31st of February
        ("it", "pressione 120/80"),
        ("it", "versione 1.2.3"),
        ("it", "ago cannula 3 ago"),  # abbreviations count only with a year
        ("en", "you may 3 times"),
        ("en", "marzo 2024"),  # Italian months are not English
        ("es", "mayo 1200"),  # no such year in a note
        ("en", "2024-03-031"),
    ],
)
def test_not_dates(language, text):
    assert find_dates(text, language) == []


def test_not_a_date_parses_to_none():
    assert parse_date("tachicardia", "it") is None
    assert parse_date("3 marzo 2024 ieri", "it") is None
    assert parse_date("", "it") is None


def test_unknown_language_is_refused():
    with pytest.raises(ValueError, match="unsupported language"):
        find_dates("3 mars 2024", "fr")
