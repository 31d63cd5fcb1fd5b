"""A ward note whose relevance maps put peaks on known words (no model needed).

Tokens are words and punctuation marks (regex `\\w+|[^\\w\\s]`). With the `sharp` profile
(kernel 1: no smoothing; lower 0.2, upper 0.4) every word scored 0.9 among zeros is a peak of
its own. The heart-rate map peaks on "130" and "tachycardic" (and "Pacemaker" for the second,
DSM, model), the pacemaker map on "Pacemaker" and "2019".
"""

import re

import numpy as np

from webapp.pipeline.models import RelevanceMap

TEXT = (
    "Pt 67 y.o. <male> & wife\n"
    "HR 130 bpm,  tachycardic; febrile 38.5 C.\n"
    "\n"
    'Pacemaker in situ since 2019. BP 110/70 "ok".'
)
TOKEN = re.compile(r"\w+|[^\w\s]")


def tokens(text: str) -> np.ndarray:
    return np.array([m.span() for m in TOKEN.finditer(text)], np.int32).reshape(-1, 2)


def word_span(text: str, word: str, nth: int = 0) -> tuple[int, int]:
    found = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", text)]
    return found[nth]


def scores_for(text: str, peaked: dict) -> np.ndarray:
    """Zero everywhere except the tokens of the given words: {word: score}."""
    offsets = tokens(text)
    scores = np.zeros(len(offsets), np.float32)
    for word, score in peaked.items():
        a, b = word_span(text, word)
        scores[(offsets[:, 0] >= a) & (offsets[:, 1] <= b)] = score
    return scores


def add_map(note, task, model, peaked, *, method="attnlrp", template="en", offsets=None, scores=None):
    offsets = tokens(note.text) if offsets is None else offsets
    scores = scores_for(note.text, peaked) if scores is None else scores
    return RelevanceMap.objects.store_one(note, task, model, offsets, scores, method=method, template=template)


def query(task, model, profile, **extra) -> dict:
    values = {"task": task.pk, "model": model.pk, "method": "attnlrp", "template": "en", "profile": profile.pk}
    values.update(extra)
    return values


def long_text(n_chars: int) -> str:
    """A note of exactly n_chars characters: a day-by-day ward log, every line different."""
    lines, size, day = [], 0, 0
    while size < n_chars:
        line = (
            f"Day {day}: HR {100 + day % 60} bpm, tachycardic; febrile 38.{day % 10} C. "
            f'Pacemaker in situ since {1990 + day % 30}. BP {100 + day % 40}/70 "ok".\n'
        )
        lines.append(line)
        size += len(line)
        day += 1
    return "".join(lines)[:n_chars]


def every_nth_token(offsets, n: int, score: float = 0.9) -> np.ndarray:
    """Scores of `score` on every n-th token, zero elsewhere: peaks all along the note."""
    scores = np.zeros(len(offsets), np.float32)
    scores[::n] = score
    return scores


def two_reviewers_one_note(corpus, task, model, users) -> list:
    """One note of `corpus` ("HR 130 bpm, afebrile.") and two users' decisions on two peaks of it
    for `task` under `model`: they agree on the first (both accept), not on the second (the first
    accepts, the second rejects). Returns the four rows, the second user's reject last."""
    import hashlib

    from webapp.corpus.models import Note
    from webapp.review.models import PeakDecision

    text = "HR 130 bpm, afebrile."
    note = Note.objects.create(
        corpus=corpus, external_id="n1", text=text, content_hash=hashlib.sha256(text.encode()).hexdigest()
    )
    return [
        PeakDecision.objects.create(
            note=note,
            task=task,
            model_version=model,
            method="attnlrp",
            template="en",
            config_key="k",
            start=start,
            end=start + 3,
            decision=decision,
            reviewer=user,
        )  # fmt: skip
        for start, by in ((0, ("accept", "accept")), (3, ("accept", "reject")))
        for user, decision in zip(users, by)
    ]
