"""A chunk's prompts reach ml.relevance note by note, so a note's tasks share their prefix there."""

import numpy as np
import pytest

from webapp.pipeline import chunks
from webapp.pipeline.models import RelevanceMap


class RecordingCompute:
    """Stands in for compute_relevance: records the notes of each call, returns flat maps."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, loaded, notes, tasks, config):
        self.calls.append(list(notes))
        return [_Flat(len(note)) for note in notes]


class _Flat:
    def __init__(self, length):
        self.offsets = np.array([[0, length]], dtype=np.int32)
        self.scores = np.ones(1, dtype=np.float32)
        self.target_token = "x"


def test_note_batches_cut_only_between_notes():
    pairs = [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1), (4, 1), (4, 2), (4, 3), (4, 4), (4, 5)]
    # at least 4 a batch; note 2's second task and note 4's last tasks stay with their note
    assert list(chunks.note_batches(pairs, 4)) == [pairs[:5], pairs[5:]]
    assert list(chunks.note_batches(pairs, 1)) == [pairs[:3], pairs[3:5], pairs[5:6], pairs[6:]]
    assert list(chunks.note_batches([], 4)) == []


def test_a_chunk_sends_each_notes_tasks_in_one_call(launched, monkeypatch):
    monkeypatch.setattr(chunks, "STORE_EVERY", 6)
    job = launched(chunk_size=24)  # 6 notes x 4 tasks in one chunk
    chunk = job.chunks.get()
    compute = RecordingCompute()
    outcome = chunks.run(chunk, get_model=lambda: object(), compute=compute)
    assert outcome.computed == 24 == RelevanceMap.objects.count()
    assert [len(call) for call in compute.calls] == [8, 8, 8]  # at least 6, whole notes
    seen = [set(call) for call in compute.calls]
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1 :])  # no note split between calls


@pytest.mark.parametrize("enabled", [True, False, None])
def test_the_workers_compute_follows_the_share_prefix_setting(settings, enabled):
    settings.RELEVANCE_SHARE_PREFIX = enabled
    compute = chunks.relevance_compute()
    assert compute.keywords == {"share_prefix": enabled}
    from ml.relevance import compute_relevance

    assert compute.func is compute_relevance
