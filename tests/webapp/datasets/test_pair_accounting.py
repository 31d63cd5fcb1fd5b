"""The build accounts for every note-task pair it reads: kept, or excluded for one reason, the
counts stored with the version, shown on its page and written in the export manifest."""

import json

import pytest
from django.urls import reverse

from webapp.corpus.models import Note
from webapp.datasets import building, export
from webapp.pipeline.models import RelevanceMap
from webapp.review import validation
from webapp.review.models import ValidationSet

from .fabricate import PEAKS, TEXT, add_map, char_span

# The fixture note n1 has the maps heart, pacemaker, pressure and heldout (see fabricate.py).
EXPECTED = {
    "held_out_task": 2,  # heldout of n1 and of its twin
    "validation_set": 2,  # heart and pacemaker of the note drawn for validation
    "map_not_fitting_note": 1,  # the edited note
    "peak_rule": 2,  # pressure (one peak) of n1 and of its twin
    "rejected_by_review": 1,  # heart of n1: "120" rejected leaves one peak
    "nothing_maskable": 0,
    "duplicate": 2,  # heart and pacemaker of the twin: the same examples as n1's
}


def build(dataset):
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    return dataset


@pytest.fixture
def several_reasons(maps, note, corpus, tasks, model, monkeypatch):
    twin = Note.objects.create(corpus=corpus, external_id="twin", text=TEXT)
    for slug in PEAKS:
        add_map(twin, tasks[slug], model, PEAKS[slug])
    held = Note.objects.create(corpus=corpus, external_id="held", text=f"{TEXT} held")
    add_map(held, tasks["heart"], model, PEAKS["heart"])
    add_map(held, tasks["pacemaker"], model, PEAKS["pacemaker"])
    vset = ValidationSet.objects.create(
        corpus=corpus,
        model_version=model,
        method="attnlrp",
        template="en",
        name="val",
        items=[[held.pk, tasks["heart"].pk]],
        grid=[],
    )
    edited = Note.objects.create(corpus=corpus, external_id="edited", text="bp low")
    add_map(edited, tasks["heart"], model, {0, 1}, offsets=[(0, 2), (3, 6), (7, 30)])
    rejected = {(note.pk, tasks["heart"].pk): [char_span(TEXT, "120")]}
    monkeypatch.setattr(building, "rejected_char_spans", lambda note_ids, task_ids: rejected)
    return vset


def test_every_pair_read_is_kept_or_excluded_by_its_reason(make_dataset, several_reasons, model):
    dataset = build(make_dataset())
    accounting = dataset.stats["pairs_accounting"]
    assert {reason: n for reason, _, n in accounting["excluded"]} == EXPECTED
    assert accounting["kept"] == 1  # pacemaker of n1 ("pacemaker", "bp")
    assert accounting["read"] == RelevanceMap.objects.filter(model_version=model).count() == 11
    assert accounting["read"] == accounting["kept"] + sum(n for _, _, n in accounting["excluded"])
    assert dataset.stats["examples"] == 2
    assert dataset.maps_total == dataset.stats["maps"] == 7  # the validation note's maps are never streamed


def test_the_manifest_carries_the_same_account(make_dataset, several_reasons, tmp_path):
    dataset = build(make_dataset())
    export.write_export(dataset, "jsonl", tmp_path / "out", actor="tester")
    pairs = json.loads((tmp_path / "out" / "manifest.json").read_text())["pairs"]
    assert {reason: row["count"] for reason, row in pairs["excluded"].items()} == EXPECTED
    assert pairs["excluded"]["validation_set"]["label"] == "Note held back by a validation set"
    assert pairs["read"] == 11 == pairs["kept"] + sum(row["count"] for row in pairs["excluded"].values())


def test_the_statistics_page_shows_each_reason_with_its_count(client, researcher, make_dataset, several_reasons):
    dataset = build(make_dataset())
    client.force_login(researcher)
    content = client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()
    table = content.split('id="pair-accounting"')[1].split("</section>")[0]
    assert 'Pairs read</strong></td><td class="num">11<' in table
    assert 'Excluded: Note held back by a validation set</td><td class="num">2<' in table
    assert 'Excluded: Fewer than two peaks once review rejections are removed</td><td class="num">1<' in table
    assert 'Excluded: Every example a duplicate of an earlier note&#x27;s</td><td class="num">2<' in table
    assert "Read = kept + 10 excluded" in table and "do not add up" not in table


def test_a_retired_validation_set_gives_its_notes_back_to_later_builds(make_dataset, several_reasons, researcher):
    before = build(make_dataset("before"))
    validation.retire(several_reasons, researcher)
    after = build(make_dataset("after"))
    excluded = {reason: n for reason, _, n in after.stats["pairs_accounting"]["excluded"]}
    assert excluded["validation_set"] == 0 and after.stats["pairs_accounting"]["read"] == 11
    assert after.stats["pairs_accounting"]["kept"] == before.stats["pairs_accounting"]["kept"] + 2
    assert after.stats["examples"] == before.stats["examples"] + 2  # the held note's "pacemaker" and "bp"
    assert before.stats["examples"] == 2  # a build made before the retirement keeps what it was built from


def test_the_one_peak_ablation_names_its_own_rule(make_dataset, maps):
    dataset = build(make_dataset(mode="one_peak"))
    excluded = {reason: (label, n) for reason, label, n in dataset.stats["pairs_accounting"]["excluded"]}
    assert excluded["peak_rule"] == ("Not exactly one peak", 2)  # heart (2 peaks) and pacemaker (3)
    assert dataset.stats["pairs_accounting"]["kept"] == 1


def test_a_version_built_before_the_accounting_says_so(client, researcher, built):
    stats = dict(built.stats)
    del stats["pairs_accounting"]
    type(built).objects.filter(pk=built.pk).update(stats=stats)
    client.force_login(researcher)
    content = client.get(reverse("datasets:detail", args=[built.pk])).content.decode()
    assert "built before pairs were accounted for" in content
