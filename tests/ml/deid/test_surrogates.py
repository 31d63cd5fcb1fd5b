"""ml.deid.surrogates: generated values pass their checks (checked with python-stdnum, an
independent implementation), lists are sound, and the keyed choice is consistent per patient."""

import random
import re

import pytest
from stdnum import iban as std_iban
from stdnum.es import dni as std_dni
from stdnum.es import nie as std_nie
from stdnum.gb import nhs as std_nhs
from stdnum.it import codicefiscale as std_cf
from stdnum.us import ssn as std_ssn

from ml.deid import surrogates as s

SECRET = b"a test secret of thirty-two bytes"
SEEDS = range(200)


@pytest.mark.parametrize("language", ["it", "es", "en"])
def test_lists_are_large_distinct_and_unambiguous(language):
    for table in (s.GIVEN_FEMALE, s.GIVEN_MALE):
        assert len(table[language]) >= 45
        assert len(set(table[language])) == len(table[language])
    family = s.FAMILY[language]
    assert len(family) >= 95 and len(set(family)) == len(family)
    # a family name is never read as a given name, so its surrogate is a family name
    assert not [name for name in family if s.is_given_name(name)]
    assert all(" " not in name for name in family)
    assert len(s.STREETS[language]) >= 15 and len(s.CITIES[language]) >= 25


def test_given_gender_by_language_first():
    assert s.given_gender("Andrea", "it") == "m"
    assert s.given_gender("ANDREA", "es") == "f"
    assert s.given_gender("lucia", "it") == "f"  # accents and case do not matter
    assert s.given_gender("Rossi", "it") is None


def test_codice_fiscale_valid():
    for seed in SEEDS:
        rng = random.Random(seed)
        value = s.codice_fiscale(rng)
        assert std_cf.is_valid(value), value
    value = s.codice_fiscale(random.Random(1), family="Rossi", given="Maria", female=True)
    assert value.startswith("RSSMRA") and int(value[9:11]) > 40  # a woman: day + 40
    assert std_cf.get_gender(value) == "F"


def test_cf_check_char_rejects_a_changed_character():
    value = s.codice_fiscale(random.Random(3))
    assert s.cf_check_char(value[:15]) == value[15]
    changed = value[:3] + ("A" if value[3] != "A" else "B") + value[4:]
    assert s.cf_check_char(changed[:15]) != value[15]


def test_dni_and_nie_valid():
    for seed in SEEDS:
        rng = random.Random(seed)
        assert std_dni.is_valid(s.dni(rng))
        assert std_nie.is_valid(s.nie(rng))


def test_nhs_number_passes_mod_11():
    for seed in SEEDS:
        value = s.nhs_number(random.Random(seed))
        assert len(value) == 10 and std_nhs.is_valid(value), value
    assert s.nhs_check_digit("943476591") == 9  # the NHS's own example, 943 476 5919


def test_ssn_valid():
    for seed in SEEDS:
        assert std_ssn.is_valid(s.ssn(random.Random(seed)))


@pytest.mark.parametrize("country", ["IT", "ES", "GB", "DE"])
def test_iban_passes_mod_97_and_country_checks(country):
    for seed in SEEDS:
        value = s.iban(random.Random(seed), country)
        assert s.iban_is_valid(value)
        if country != "DE":  # stdnum checks the Spanish CCC digits and every country's structure
            assert std_iban.is_valid(value), value
    assert s.iban_is_valid("IT60 X054 2811 1010 0000 0123 456")
    assert not s.iban_is_valid("IT61 X054 2811 1010 0000 0123 456")


@pytest.mark.parametrize(
    "country, pattern",
    [
        ("IT", r"(\+39 )?(3\d\d ?\d{3} ?\d{4}|3\d\d \d{7}|0\d{1,3}[ -]?\d{2,8}( \d{4})?)"),
        ("ES", r"(\+34 )?[6-9][\d ]{8,11}"),
        ("GB", r"(\+44 |0)[1-9][\d ]{9,11}"),
        ("US", r"(\+1 [2-9]\d\d [2-9]\d\d \d{4}|\(?[2-9]\d\d\)?[ .-][2-9]\d\d[.-]\d{4})"),
    ],
)
def test_phone_numbers_of_each_country(country, pattern):
    for seed in SEEDS:
        value = s.phone(random.Random(seed), country)
        assert re.fullmatch(pattern, value), value
        assert s.phone_is_valid(value, country), value  # libphonenumber, as the detector checks


def test_email_url_ip_on_reserved_ranges():
    for seed in range(50):
        rng = random.Random(seed)
        assert re.fullmatch(r"[a-z0-9.]+@example\.(com|org|net)", s.email(rng, "es"))
        assert s.url(rng).startswith("https://www.example.")
        assert re.fullmatch(r"(192\.0\.2|198\.51\.100|203\.0\.113)\.\d+", s.ip_address(rng))
        assert s.ip_address(rng, 6).startswith("2001:db8:")


def test_reshape_and_same_shape():
    assert s.reshape("943 476 5919", "1234567890") == "123 456 7890"
    assert s.reshape("12345678-z", "87654321X") == "87654321-x"
    assert s.reshape("123", "12345") == "12345"  # different length: as it is
    new = s.same_shape(random.Random(0), "RIC-2024/00123ab")
    assert re.fullmatch(r"[A-Z]{3}-\d{4}/\d{5}[a-z]{2}", new)


def test_date_shift_in_range_and_per_patient():
    shifts = {s.date_shift_days(SECRET, f"patient {i}") for i in range(300)}
    assert all(30 <= abs(d) <= 365 for d in shifts)
    assert min(shifts) < 0 < max(shifts) and len(shifts) > 100
    assert s.date_shift_days(SECRET, "p") == s.date_shift_days(SECRET, "p")
    others = [s.date_shift_days(b"another secret", f"patient {i}") for i in range(20)]
    assert others != [s.date_shift_days(SECRET, f"patient {i}") for i in range(20)]  # keyed by the secret


class TestKeyedChoice:
    surrogates = s.Surrogates("it", SECRET)

    def test_same_patient_same_value_same_surrogate(self):
        a = self.surrogates.value("CODICE_FISCALE", "RSSMRA80A01H501U", "P1")
        assert a == self.surrogates.value("CODICE_FISCALE", "rssmra80a01h501u".upper(), "P1")
        assert std_cf.is_valid(a)

    def test_other_patient_or_secret_other_surrogate(self):
        a = self.surrogates.value("PHONE", "347 123 4567", "P1")
        assert a != self.surrogates.value("PHONE", "347 123 4567", "P2")
        assert a != s.Surrogates("it", b"another secret").value("PHONE", "347 123 4567", "P1")

    @pytest.mark.parametrize(
        "type_, original, check",
        [
            ("CODICE_FISCALE", "RSSMRA80A01H501U", std_cf.is_valid),
            ("DNI_NIE", "12345678Z", std_dni.is_valid),
            ("DNI_NIE", "X1234567L", std_nie.is_valid),
            ("NHS_NUMBER", "943 476 5919", std_nhs.is_valid),
            ("SSN", "123-45-6789", std_ssn.is_valid),
            ("IBAN", "IT60 X054 2811 1010 0000 0123 456", std_iban.is_valid),
            ("IBAN", "ES91 2100 0418 4502 0005 1332", std_iban.is_valid),
            ("IBAN", "GB29 NWBK 6016 1331 9268 19", std_iban.is_valid),
        ],
    )
    def test_surrogate_is_valid_in_the_original_shape(self, type_, original, check):
        for patient in ("P1", "P2", "P3", "P4"):
            new = self.surrogates.value(type_, original, patient)
            assert check(new), new
            assert new != original
            assert [c.isalnum() for c in new] == [c.isalnum() for c in original]  # separators kept

    def test_phone_keeps_prefix_and_shape_and_is_valid(self):
        for patient in ("P1", "P2", "P3"):
            new = self.surrogates.value("PHONE", "+39 347 123 4567", patient)
            assert re.fullmatch(r"\+39 3\d\d \d{3} \d{4}", new) and new != "+39 347 123 4567"
            assert s.phone_is_valid(new, "IT")
            new = self.surrogates.value("PHONE", "06 1234 5678", patient)
            assert re.fullmatch(r"06 \d{4} \d{4}", new) and s.phone_is_valid(new, "IT")
        en = s.Surrogates("en", SECRET)
        for patient in ("P1", "P2", "P3", "P4", "P5"):
            new = en.value("PHONE", "(617) 555-0147", patient)
            assert re.fullmatch(r"\(6\d\d\) [2-9]\d\d-\d{4}", new) and s.phone_is_valid(new, "US"), new
            new = en.value("PHONE", "07911 575092", patient)
            assert re.fullmatch(r"07\d{3} \d{6}", new) and s.phone_is_valid(new, "GB"), new
            new = en.value("PHONE", "+44 161 496 0123", patient)
            assert re.fullmatch(r"\+44 1\d\d \d{3} \d{4}", new) and s.phone_is_valid(new, "GB"), new
        es = s.Surrogates("es", SECRET)
        new = es.value("PHONE", "612 345 678", "P1")
        assert re.fullmatch(r"6\d\d \d{3} \d{3}", new) and s.phone_is_valid(new, "ES")

    def test_record_number_keeps_letters_and_digits(self):
        new = self.surrogates.value("RECORD_NUMBER", "RIC-2024-000123", "P1")
        assert re.fullmatch(r"[A-Z]{3}-\d{4}-\d{6}", new) and new != "RIC-2024-000123"

    def test_name_token_gender_and_never_itself(self):
        for patient in map(str, range(40)):
            assert s.given_gender(self.surrogates.name_token(patient, "Maria"), "it") == "f"
            assert s.given_gender(self.surrogates.name_token(patient, "Mario"), "it") == "m"
            family = self.surrogates.name_token(patient, "Rossi")
            assert family in s.FAMILY["it"] and family != "Rossi"
        assert self.surrogates.name_token("P1", "ROSSI") == self.surrogates.name_token("P1", "rossi")

    def test_a_secret_is_required(self):
        with pytest.raises(ValueError, match="secret"):
            s.Surrogates("it", b"")
