"""Dataset statistics count the examples whose masked span was a peak for several, or every, task
of its note (webapp.datasets.stats.SharedPeaks, fed by the build)."""

from webapp.datasets import building
from webapp.datasets.stats import SharedPeaks, present


def build(dataset):
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    return dataset


def test_a_span_peaked_by_two_of_three_tasks_is_shared_but_not_every_tasks(make_dataset, maps):
    stats = build(make_dataset()).stats  # "pacemaker" peaks for heart and pacemaker, not pressure
    assert stats["examples_shared_across_tasks"] == 1 and stats["examples_same_peak_every_task"] == 0


def test_with_only_the_two_tasks_that_share_it_the_span_is_every_tasks(make_dataset, maps, tasks):
    chosen = [tasks["heart"].pk, tasks["pacemaker"].pk]
    stats = build(make_dataset(filters={"tasks": chosen})).stats
    assert stats["examples_same_peak_every_task"] == 1
    funnel = dict(present(stats)["funnel"])
    assert funnel["… for every task of its note (says little about any one task)"] == 1


def test_the_counter_keeps_only_the_last_notes_and_a_lone_task_is_never_shared():
    counter = SharedPeaks()
    for note, tasks in ((1, 3), (2, 2), (3, 1)):
        for _ in range(tasks):
            counter.pair(note)
    counter.example(1, [10, 11, 12])  # every task of note 1
    counter.example(2, [10])  # one task: not shared
    counter.example(2, [10, 11])  # both of note 2's tasks
    assert counter.result() == {"examples_shared_across_tasks": 2, "examples_same_peak_every_task": 2}
    for note in range(10, 20):
        counter.pair(note)
    assert len(counter.tasks_of) == SharedPeaks.KEEP_NOTES


def test_a_build_from_before_the_count_does_not_show_it():
    labels = [label for label, _ in present({"examples": 3})["funnel"]]
    assert not any("every task" in label for label in labels)
