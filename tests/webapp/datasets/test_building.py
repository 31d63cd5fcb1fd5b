"""Building datasets from fabricated stored maps: the rules of docs/METHOD.md, sections Peaks and Masking."""

import numpy as np
import pytest

from tests.projects import default_project
from webapp.corpus.models import Note, text_hash
from webapp.datasets import building
from webapp.datasets.models import BuildError, DatasetVersion, MaskedExample
from webapp.pipeline.models import JobStatus, RelevanceJob

from .fabricate import PEAKS, TEXT, add_map, add_notes_with_maps, char_span


def build(dataset):
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    return dataset


def rows(dataset):
    return [
        (e.note_id, e.tasks, e.masked_text, e.label, e.char_start, e.char_end, e.relevance_map_id)
        for e in MaskedExample.objects.filter(dataset=dataset).order_by("id")
    ]


def labels(dataset):
    return sorted(MaskedExample.objects.filter(dataset=dataset).values_list("label", flat=True))


def test_a_pair_with_two_peaks_masks_every_peak_but_the_leftmost(make_dataset, maps, tasks):
    dataset = build(make_dataset())
    examples = list(MaskedExample.objects.filter(dataset=dataset).order_by("char_start"))
    assert [e.label for e in examples] == ["pacemaker", "bp"]
    first = examples[0]
    a, b = char_span(TEXT, "pacemaker")
    assert (first.char_start, first.char_end) == (a, b)
    assert first.masked_text == TEXT[:a] + "<mask>" + TEXT[b:]


def test_the_leftmost_peak_is_never_masked(make_dataset, maps):
    dataset = build(make_dataset())
    assert "120" not in labels(dataset)  # the leftmost peak of heart and of pacemaker


def test_a_pair_with_one_peak_gives_no_example(make_dataset, maps, tasks):
    dataset = build(make_dataset(filters={"tasks": [tasks["pressure"].pk]}))
    assert dataset.status == JobStatus.DONE
    assert labels(dataset) == []
    assert dataset.stats["pairs"] == 1 and dataset.stats["pairs_two_or_more_peaks"] == 0


def test_the_same_example_from_two_tasks_is_kept_once_listing_both(make_dataset, maps, tasks):
    dataset = build(make_dataset())
    pacemaker = MaskedExample.objects.get(dataset=dataset, label="pacemaker")
    assert pacemaker.tasks == [tasks["heart"].pk, tasks["pacemaker"].pk]
    assert pacemaker.relevance_map_id == maps["heart"].pk  # the first map that produced it
    bp = MaskedExample.objects.get(dataset=dataset, label="bp")
    assert bp.tasks == [tasks["pacemaker"].pk] and bp.relevance_map_id == maps["pacemaker"].pk
    assert dataset.stats["merged_across_tasks"] == 1


def test_a_note_repeating_an_earlier_notes_text_adds_no_example(make_dataset, maps, corpus, tasks, model):
    twin = Note.objects.create(corpus=corpus, external_id="n2-same-text", text=TEXT)
    add_map(twin, tasks["heart"], model, PEAKS["heart"])
    dataset = build(make_dataset())
    assert labels(dataset) == ["bp", "pacemaker"]
    assert dataset.stats["dropped_duplicate_notes"] == 1
    assert dataset.stats["duplicates_removed"] == 2


def test_held_out_tasks_are_left_out_unless_included(make_dataset, maps, tasks):
    default = build(make_dataset("a"))
    assert all(tasks["heldout"].pk not in e.tasks for e in MaskedExample.objects.filter(dataset=default))
    assert default.stats["pairs"] == 3
    included = build(make_dataset("b", filters={"exclude_held_out": False}))
    assert labels(included) == ["120", "bp", "pacemaker"]
    assert MaskedExample.objects.get(dataset=included, label="120").tasks == [tasks["heldout"].pk]


def test_a_held_out_task_chosen_by_name_is_still_left_out_by_default(make_dataset, maps, tasks):
    dataset = make_dataset(filters={"tasks": [tasks["heldout"].pk]})
    with pytest.raises(BuildError, match="No relevance maps match"):
        building.build(building.claim(dataset.pk))


def test_the_task_and_note_filters_select_maps(make_dataset, maps, corpus, tasks, model):
    other = Note.objects.create(corpus=corpus, external_id="n9", text="bp low and hr high today")
    add_map(other, tasks["heart"], model, {1, 4})
    only_heart = build(make_dataset("a", filters={"tasks": [tasks["heart"].pk]}))
    assert labels(only_heart) == ["high", "pacemaker"]
    only_other = build(make_dataset("b", filters={"notes": [other.pk]}))
    assert labels(only_other) == ["high"]


def test_notes_of_another_corpus_are_not_used(make_dataset, maps, tasks, model):
    from webapp.corpus.models import Corpus

    elsewhere = Note.objects.create(
        corpus=Corpus.objects.create(project=default_project(), name="other", language="en"),
        external_id="x",
        text="bp low and hr high today",
    )
    add_map(elsewhere, tasks["heart"], model, {1, 4})
    assert labels(build(make_dataset("a"))) == ["bp", "pacemaker"]
    assert labels(build(make_dataset("b", filters={"notes": [elsewhere.pk, maps["heart"].note_id]}))) == [
        "bp",
        "pacemaker",
    ]


def test_a_sparse_selection_over_many_notes_is_found(make_dataset, corpus, tasks, model, monkeypatch):
    monkeypatch.setattr(building, "NOTE_BLOCK_START", 1)
    notes = Note.objects.bulk_create(
        [
            Note(corpus=corpus, external_id=f"e{i:03d}", text=f"empty {i}", content_hash=text_hash(f"empty {i}"))
            for i in range(300)
        ]
    )
    last = Note.objects.create(corpus=corpus, external_id="last", text=TEXT)
    add_map(last, tasks["heart"], model, PEAKS["heart"])
    dataset = build(make_dataset())
    assert labels(dataset) == ["pacemaker"] and len(notes) == 300


def test_maps_of_another_model_method_template_or_job_are_not_used(make_dataset, maps, note, tasks, model):
    from webapp.pipeline.models import ModelVersion

    other_model = ModelVersion.objects.create(name="other", family="llama", path="other")
    add_map(note, tasks["heart"], other_model, {1, 10})
    add_map(note, tasks["heart"], model, {1, 10}, method="grad_input")
    add_map(note, tasks["heart"], model, {1, 10}, template="it")
    assert labels(build(make_dataset("a"))) == ["bp", "pacemaker"]
    job = RelevanceJob.objects.create(corpus=note.corpus, model_version=model)
    RelevanceJob.objects.create(corpus=note.corpus, model_version=model)
    maps["heart"].job = job
    maps["heart"].save()
    from_job = make_dataset("b")
    from_job.jobs.set([job])
    assert labels(build(from_job)) == ["pacemaker"]


def test_peaks_are_extended_to_whole_words(make_dataset, corpus, tasks, model):
    text = "hr 80 and pacemaker"
    note = Note.objects.create(corpus=corpus, external_id="split", text=text)
    offsets = [(0, 2), (3, 5), (6, 9), (10, 14), (14, 19)]  # "pace" + "maker"
    add_map(note, tasks["heart"], model, {1, 4}, offsets=offsets)  # only "maker" peaks
    dataset = build(make_dataset())
    example = MaskedExample.objects.get(dataset=dataset)
    assert (example.label, example.char_start, example.char_end) == ("pacemaker", 10, 19)
    assert example.masked_text == "hr 80 and <mask>"


def test_the_profile_smooths_before_thresholding(make_dataset, maps, paper):
    # kernel 3, sigma 1: a lone 0.9 becomes 0.41 with 0.25 on each side, so the peaks of tokens 3
    # and 6 touch (one group: tokens 2-7) and the peak of token 10 covers tokens 9-11
    dataset = build(make_dataset(profile=paper, filters={"tasks": [maps["pacemaker"].task_id]}))
    assert labels(dataset) == ["and bp low"]
    assert dict(dataset.stats["groups_per_pair"])["2"] == 1


def test_the_random_ablation_masks_whole_words_as_long_as_the_peaks(make_dataset, maps):
    dsm = build(make_dataset("dsm"))
    random = build(make_dataset("rnd", mode="random", seed=7))
    again = build(make_dataset("rnd", mode="random", seed=7))
    assert random.stats["candidates"] == dsm.stats["candidates"]
    assert [r[2:6] for r in rows(random)] == [r[2:6] for r in rows(again)]  # seeded
    word_starts = {TEXT.index(w) for w in TEXT.split()[1:]}
    for e in MaskedExample.objects.filter(dataset=random):
        assert e.char_start in word_starts  # a word start, never the first word
        assert e.label == TEXT[e.char_start : e.char_end] and e.label.strip() == e.label
        assert e.masked_text == TEXT[: e.char_start] + "<mask>" + TEXT[e.char_end :]
        assert len(e.label) >= len("bp")


def test_the_one_peak_ablation_masks_the_only_peak_of_single_peak_pairs(make_dataset, maps, tasks):
    dataset = build(make_dataset(mode="one_peak"))
    example = MaskedExample.objects.get(dataset=dataset)
    assert (example.label, example.tasks) == ("bp", [tasks["pressure"].pk])
    assert dataset.stats["pairs_used"] == 1


def test_the_unmasked_ablation_keeps_each_two_peak_note_once_as_plain_text(make_dataset, maps, tasks):
    dataset = build(make_dataset(mode="unmasked"))
    example = MaskedExample.objects.get(dataset=dataset)
    assert example.masked_text == TEXT and example.label == ""
    assert example.char_start is None and example.char_end is None
    assert example.tasks == [tasks["heart"].pk, tasks["pacemaker"].pk]


def test_the_mask_token_is_the_datasets(make_dataset, maps):
    dataset = build(make_dataset(mask_token="<|fim_middle|>"))
    assert all("<|fim_middle|>" in e.masked_text for e in MaskedExample.objects.filter(dataset=dataset))


def test_statistics_describe_the_build(make_dataset, maps, tasks):
    stats = build(make_dataset()).stats
    assert stats["maps"] == 3 and stats["pairs"] == 3 and stats["pairs_used"] == 2
    assert stats["pairs_two_or_more_peaks"] == 2
    assert dict(stats["groups_per_pair"])["1"] == 1 and dict(stats["groups_per_pair"])["2"] == 1
    assert dict(stats["groups_per_pair"])["3"] == 1 and dict(stats["groups_per_pair"])["0"] == 0
    assert stats["notes"] == 1 and stats["notes_used"] == 1
    assert stats["candidates"] == 3 and stats["examples"] == 2 and stats["duplicates_removed"] == 1
    assert stats["examples_per_task"] == {"pacemaker": 2, "heart": 1}
    chars = dict(stats["span_chars"]["histogram"])
    assert chars["2"] == 1 and chars["5-9"] == 1 and sum(chars.values()) == 2  # "bp", "pacemaker"
    assert stats["span_chars"]["mean"] == 5.5 and stats["span_chars"]["max"] == 9
    assert dict(stats["span_words"]["histogram"])["1"] == 2
    assert stats["profile"] == {
        "kernel_size": 1,
        "sigma": 1.0,
        "lower": 0.2,
        "upper": 0.4,
        "strict": False,
        "trim": True,
    }
    from ml.relevance import default_config_key

    assert stats["config_key"] == default_config_key("attnlrp", "en")
    assert stats["seconds"] >= 0 and stats["maps_not_fitting_note"] == 0


def test_rebuilding_gives_the_same_rows_and_no_duplicates(make_dataset, maps):
    dataset = build(make_dataset(mode="random", seed=3))
    first = rows(dataset)
    DatasetVersion.objects.filter(pk=dataset.pk).update(status=JobStatus.QUEUED)
    build(dataset)
    second = rows(dataset)
    assert len(second) == len(first) == dataset.stats["examples"] == MaskedExample.objects.count()
    assert second == first


def test_small_batches_give_the_same_dataset(make_dataset, corpus, tasks, model, monkeypatch):
    notes = [Note.objects.create(corpus=corpus, external_id=f"b{i}", text=f"{TEXT} n{i}") for i in range(5)]
    for note in notes:
        for slug in ("heart", "pacemaker", "pressure"):
            add_map(note, tasks[slug], model, PEAKS[slug])
    whole = build(make_dataset("whole"))
    monkeypatch.setattr(building, "BATCH_MAPS", 2)  # one note a batch: examples cross batch boundaries
    monkeypatch.setattr(building, "NOTE_BLOCK_START", 2)
    monkeypatch.setattr(building, "WRITE_BATCH", 3)
    cut = build(make_dataset("cut"))
    assert cut.stats["examples"] == whole.stats["examples"] == 10
    assert cut.stats["merged_across_tasks"] == 5
    assert [r[:6] for r in rows(cut)] == [r[:6] for r in rows(whole)]
    assert [r[6] for r in rows(cut)] == [r[6] for r in rows(whole)]


def test_rejected_peaks_are_never_masked_nor_counted(make_dataset, maps, note, tasks, monkeypatch):
    bp = char_span(TEXT, "bp")
    monkeypatch.setattr(
        building, "rejected_char_spans", lambda note_ids, task_ids: {(note.pk, tasks["pacemaker"].pk): [bp]}
    )
    dataset = build(make_dataset())
    assert labels(dataset) == ["pacemaker"]
    assert dataset.stats["peaks_rejected_by_review"] == 1


def test_without_review_decisions_nothing_is_rejected(note, tasks):
    assert building.rejected_char_spans([note.pk], [tasks["heart"].pk]) == {}


def test_a_map_that_does_not_fit_its_note_is_skipped_and_counted(make_dataset, maps, corpus, tasks, model):
    short = Note.objects.create(corpus=corpus, external_id="edited", text="bp low")
    add_map(short, tasks["heart"], model, {0, 1}, offsets=[(0, 2), (3, 6), (7, 30)])
    dataset = build(make_dataset())
    assert dataset.stats["maps_not_fitting_note"] == 1 and labels(dataset) == ["bp", "pacemaker"]


def test_no_matching_maps_is_said_in_plain_words(make_dataset, tasks):
    dataset = building.claim(make_dataset().pk)
    with pytest.raises(BuildError) as error:
        building.build(dataset)
    message = building.fail(dataset, error.value)
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.FAILED and dataset.error == message
    assert "run a relevance job first" in message


def test_an_unexpected_error_fails_the_build_without_keeping_examples(make_dataset, maps, monkeypatch):
    def broken(*args):
        assert MaskedExample.objects.exists()  # the examples were written when it broke
        raise RuntimeError("secret note text")

    monkeypatch.setattr(building._Tally, "result", broken)
    dataset = building.claim(make_dataset().pk)
    with pytest.raises(RuntimeError) as error:
        building.build(dataset)
    message = building.fail(dataset, error.value)
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.FAILED and not dataset.examples.exists()
    assert "RuntimeError" in message and "secret" not in message and dataset.error == message


def test_progress_counts_maps(make_dataset, maps):
    dataset = build(make_dataset())
    assert (dataset.maps_total, dataset.maps_done, dataset.progress_percent) == (3, 3, 100)


def test_scores_are_used_as_stored(make_dataset, note, tasks, model):
    scores = np.zeros(12, np.float32)
    scores[[3, 6]] = [0.39, 0.9]  # 0.39 < upper: "120" is not a peak, so one group only
    add_map(note, tasks["heart"], model, scores=scores)
    dataset = build(make_dataset())
    assert dataset.stats["pairs_two_or_more_peaks"] == 0


def test_notes_held_back_for_threshold_validation_never_reach_a_dataset(make_dataset, maps, note, model, tasks):
    from webapp.review.models import ValidationSet

    ValidationSet.objects.create(
        corpus=note.corpus,
        model_version=model,
        method="attnlrp",
        template="en",
        name="val",
        items=[[note.pk, tasks["heart"].pk]],
        grid=[],
    )
    dataset = build(make_dataset())
    assert MaskedExample.objects.filter(dataset=dataset).count() == 0
    assert dataset.status == JobStatus.DONE


# ---------------------------------------------------------------- memory: digests only for notes that may repeat


def spy_on_build_stats(monkeypatch) -> list:
    """The BuildStats objects the builds of the test make (build_examples fills them in)."""
    made = []

    class Spy(building.BuildStats):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(building, "BuildStats", Spy)
    return made


def mixed_corpus(corpus, tasks, model):
    """Beside the `maps` fixture's note: a note with its text, 20 notes of their own text, and two
    different notes that mask to the same example ("<mask>" in the text: ml.masking)."""
    twin = Note.objects.create(corpus=corpus, external_id="n1-twin", text=TEXT)
    add_map(twin, tasks["heart"], model, PEAKS["heart"])
    for name, text, peaked in (("m1", "hr 120 then <mask> bp", {1, 4}), ("m2", "hr 120 then bp <mask>", {1, 3})):
        add_map(Note.objects.create(corpus=corpus, external_id=name, text=text), tasks["heart"], model, peaked)
    add_notes_with_maps(corpus, tasks, model, 20)
    return twin


def test_only_notes_sharing_their_text_are_found(maps, corpus, note):
    twin = Note.objects.create(corpus=corpus, external_id="n1-twin", text=TEXT)
    Note.objects.create(corpus=corpus, external_id="other", text=TEXT + " other")
    from webapp.corpus.models import Corpus

    elsewhere = Corpus.objects.create(project=default_project(), name="elsewhere", language="en")
    Note.objects.create(corpus=elsewhere, external_id="n1", text=TEXT + " other")
    dataset = DatasetVersion(corpus=corpus)
    assert building.notes_sharing_text(dataset) == {str(note.pk), str(twin.pk)}
    dataset.filters = {"notes": [note.pk]}
    assert building.notes_sharing_text(dataset) == set()


def test_notes_with_a_text_of_their_own_keep_no_digest(make_dataset, corpus, tasks, model, monkeypatch):
    add_notes_with_maps(corpus, tasks, model, 30)
    made = spy_on_build_stats(monkeypatch)
    dataset = build(make_dataset())
    assert dataset.stats["examples"] == 60 and made[-1].examples == 60
    assert made[-1].digests_kept == 0


def test_a_note_repeating_a_text_is_still_deduplicated_with_digests_for_few_notes(
    make_dataset, maps, corpus, tasks, model, monkeypatch
):
    mixed_corpus(corpus, tasks, model)
    made = spy_on_build_stats(monkeypatch)
    dataset = build(make_dataset())
    assert dataset.stats["dropped_duplicate_notes"] == 2  # the twin's "pacemaker", m2's "bp"
    accounting = {reason: n for reason, _, n in dataset.stats["pairs_accounting"]["excluded"]}
    assert accounting["duplicate"] == 2
    assert MaskedExample.objects.filter(dataset=dataset, masked_text="hr 120 then <mask> <mask>").count() == 1
    assert made[-1].digests_kept == 3  # n1's two examples and m1's one; none of the 20 others'


def test_the_dataset_is_the_one_built_remembering_every_example(make_dataset, maps, corpus, tasks, model, monkeypatch):
    mixed_corpus(corpus, tasks, model)
    for mode in ("dsm", "random", "one_peak", "unmasked"):
        hinted = build(make_dataset(f"hinted-{mode}", mode=mode, seed=5))
        with monkeypatch.context() as patch:
            patch.setattr(building, "notes_sharing_text", lambda dataset: None)  # as before: every digest kept
            every = build(make_dataset(f"every-{mode}", mode=mode, seed=5))
        assert hinted.stats["examples"] > 0 and rows(hinted) == rows(every)
        assert {**hinted.stats, "seconds": 0} == {**every.stats, "seconds": 0}
