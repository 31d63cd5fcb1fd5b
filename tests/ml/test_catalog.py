"""The task catalog: the shipped CRF catalog and validation of user catalogs."""

import json
from pathlib import Path

import pytest

from ml.catalog import DEFAULT_CATALOG_PATH, CatalogError, TaskSpec, catalog_index, load_catalog, parse_catalog, slugify

SHARED_CRF = Path(__file__).resolve().parents[3] / "shared" / "data" / "crf" / "crf_items.json"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def write(tmp_path, data) -> Path:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def entry(**overrides):
    base = {
        "slug": "heart-rate",
        "description": "heart rate",
        "options": ["bradycardic", "normocardic", "tachycardic", "unknown"],
        "group": "vital signs",
    }
    base.update(overrides)
    return base


def test_the_shipped_catalog_is_a_file_inside_the_ml_package():
    assert DEFAULT_CATALOG_PATH.is_file()
    assert DEFAULT_CATALOG_PATH.parent.parent == Path(__file__).resolve().parents[2] / "ml"


def test_the_shipped_catalog_holds_all_crf_items(catalog):
    assert len(catalog) == 134
    assert all(isinstance(task, TaskSpec) for task in catalog)


def test_slugs_are_unique_lowercase_and_at_most_80_characters(catalog):
    slugs = [task.slug for task in catalog]
    assert len(set(slugs)) == len(slugs)
    for slug in slugs:
        assert slug == slug.lower() and len(slug) <= 80
        assert set(slug) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")


def test_every_task_has_distinct_non_empty_options_and_a_group(catalog):
    for task in catalog:
        assert task.options and len(set(task.options)) == len(task.options)
        assert task.group


def test_descriptions_keep_the_paper_wording_and_options_their_order(catalog):
    tasks = catalog_index(catalog)
    assert tasks["heart-rate"].description == "heart rate"
    assert tasks["heart-rate"].options == ("bradycardic", "normocardic", "tachycardic", "unknown")
    assert tasks["level-of-consciousness"].options == ("A", "V", "P", "unknown")
    # a typo in the item text stays in s_T; the corrected wording is an alias and the slug
    assert tasks["first-episode-of-epilepsy"].description == "first episod of epilepsy"
    assert "first episode of epilepsy" in tasks["first-episode-of-epilepsy"].aliases
    assert tasks["pao2"].description == "pa02"


def test_a_handful_of_tasks_are_held_out_by_default(catalog):
    held_out = {task.slug for task in catalog if task.held_out}
    assert 5 <= len(held_out) <= 8
    assert {"respiratory-rate", "presence-of-pacemaker", "troponin"} <= held_out


@pytest.mark.skipif(not SHARED_CRF.exists(), reason="shared CRF data not on this machine")
def test_descriptions_and_options_match_the_source_items(catalog):
    source = json.loads(SHARED_CRF.read_text(encoding="utf-8"))
    assert [(t.description, list(t.options)) for t in catalog] == [(i["item"], i["options"]) for i in source]


def test_it_reads_a_plain_list_and_fills_defaults(tmp_path):
    path = write(tmp_path, [{"description": "Presence of pacemaker", "options": ["y", "n"]}])
    [task] = load_catalog(path)
    assert task == TaskSpec("presence-of-pacemaker", "Presence of pacemaker", ("y", "n"), "", False, ())


def test_parse_catalog_accepts_an_object_with_tasks():
    [task] = parse_catalog({"version": 1, "tasks": [entry(held_out=True, aliases=["HR"])]})
    assert task.held_out and task.aliases == ("HR",)


def test_slugify_makes_catalog_slugs():
    assert slugify("Duration of the patient's unconsciousness") == "duration-of-the-patients-unconsciousness"
    assert slugify("ecg, any abnormality") == "ecg-any-abnormality"
    assert len(slugify("word " * 40)) <= 80


@pytest.mark.parametrize(
    "entries, message",
    [
        ([entry(), entry(description="pulse")], "duplicate slug 'heart-rate'"),
        ([entry(options=[])], "'options' must be a non-empty list"),
        ([entry(options="y/n")], "'options' must be a non-empty list"),
        ([entry(options=["y", "n", "y"])], "duplicate option(s) 'y'"),
        ([entry(options=["y", ""])], "every option must be a non-empty string"),
        ([entry(slug="Heart Rate")], "bad slug 'Heart Rate'"),
        ([entry(slug="a" * 81)], "bad slug"),
        ([entry(slug="heart--rate")], "bad slug"),
        ([entry(description="")], "'description' must be a non-empty string"),
        ([entry(held_out="yes")], "'held_out' must be true or false"),
        ([entry(aliases="HR")], "'aliases' must be a list"),
        ([entry(colour="red")], "unknown key(s) colour"),
        ([entry(), entry(slug="pulse")], "already names task 0"),
        ([], "the catalog has no tasks"),
        ({"items": []}, "'tasks' list"),
        ("heart rate", "expected a list of tasks"),
        ([["heart rate"]], "task 0: expected an object"),
    ],
)
def test_it_refuses_a_bad_catalog_with_a_clear_error(tmp_path, entries, message):
    path = write(tmp_path, entries)
    with pytest.raises(CatalogError) as error:
        load_catalog(path)
    assert message in str(error.value)
    assert str(path) in str(error.value)


def test_the_error_names_the_task_that_is_wrong(tmp_path):
    path = write(tmp_path, [entry(), entry(slug="spo2", description="spo2", options=["measured", "measured"])])
    with pytest.raises(CatalogError, match=r"task 1 \('spo2'\): duplicate option"):
        load_catalog(path)


def test_it_refuses_a_file_that_is_not_json(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(CatalogError, match="not valid JSON"):
        load_catalog(path)


def test_it_refuses_a_missing_file(tmp_path):
    with pytest.raises(CatalogError, match="cannot read the catalog"):
        load_catalog(tmp_path / "missing.json")


def test_options_are_kept_in_nfc_and_both_forms_of_one_are_a_duplicate():
    nfc, nfd = "s\u00ec", "si\u0300"  # "sì" composed, and i with a combining grave accent
    [task] = parse_catalog([{"description": "fever", "options": [nfd, "no"], "aliases": [nfd]}])
    assert task.options == (nfc, "no") and task.aliases == (nfc,)
    with pytest.raises(CatalogError, match="duplicate option"):
        parse_catalog([{"description": "fever", "options": [nfc, nfd]}])


def test_slugify_transliterates_accents_instead_of_dropping_the_letters():
    assert slugify("diagnóstico") == "diagnostico"  # was "diagn-stico"
    assert slugify("Ünïcødé") == "unicode"
    assert slugify("Straße, Æsir, Łódź") == "strasse-aesir-lodz"
    assert slugify("diagno\u0301stico") == "diagnostico"  # the accent typed as a combining mark
    assert slugify("Ελληνικά") == ""  # no Latin form: no slug (the form asks for one)
    assert len(slugify("é" * 200, max_length=100)) == 100
