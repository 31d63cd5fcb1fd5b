"""Task-specificity of relevance maps: do a note's maps change with the task asked about?

A map that peaks on the patient's age whatever the task says little about heart rate. Without
gold, two measurements tell it:

* per NOTE, across its tasks: the Spearman rank correlation of two tasks' maps over the note
  tokens both cover (1 = the same ranking), and how much of one task's peak characters are also
  peak characters of another's (`peak_share`, 1 = every peak character is shared). A task's
  peaks are "the same as for every other task" (`same_as_all`) when, for EVERY other task of the
  note, at least `same_share` of its peak characters are peaks there too (at least one other
  task, at least one peak). `shared_peaks` lists the task's peaks that lie (by that share) inside
  the peaks of every other task: those are the ones to distrust.
* per TASK, across notes: how often its peak texts repeat (the same words, case and spacing
  folded, peaking in several notes): a templated string ("ESI 2") peaking in every note for an
  anticoagulant task points at the template, not at the drug.

Maps of one note usually share their tokens (the note part of each prompt is tokenised alike);
when they do not, the comparison uses the tokens with the same character offsets in both.
Everything here is numpy and the standard library; inputs are the stored arrays and the
character spans of ml.peaks. Cost: O(tasks^2 x tokens log tokens) per note; no model.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

Span = tuple[int, int]


@dataclass(frozen=True)
class SpecificityParams:
    same_share: float = 0.8  # share of a task's peak characters also peaks for another task: "the same"
    top_repeats: int = 5  # repeated peak texts listed per task

    def __post_init__(self):
        if not 0 < self.same_share <= 1:
            raise ValueError("same_share must be in (0, 1]")


@dataclass
class TaskMap:
    task: object  # the task's id or description
    offsets: np.ndarray  # (n, 2) character spans of the note tokens
    scores: np.ndarray  # (n,) relevance
    peaks: Sequence[Span] = ()  # character spans of the map's peaks (ml.peaks)


@dataclass
class TaskSpecificity:
    task: object
    n_peaks: int
    spearman_mean: float  # mean rank correlation with the note's other tasks' maps (nan: none)
    peak_share_min: float  # lowest share of its peak characters that another task also peaks on
    peak_share_mean: float
    same_as_all: bool  # its peaks are those of every other task of the note (module doc)
    shared_peaks: list[Span] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "task": self.task,
            "n_peaks": self.n_peaks,
            "spearman_mean": _none(self.spearman_mean),
            "peak_share_min": _none(self.peak_share_min),
            "peak_share_mean": _none(self.peak_share_mean),
            "same_as_all": self.same_as_all,
            "shared_peaks": [list(s) for s in self.shared_peaks],
        }


@dataclass
class NoteSpecificity:
    tasks: list[TaskSpecificity]
    pairs: list[dict]  # {"a", "b", "spearman", "jaccard"} per pair of tasks

    def of(self, task) -> TaskSpecificity | None:
        return next((t for t in self.tasks if t.task == task), None)


# ---------------------------------------------------------------- primitives


def spearman(x, y) -> float:
    """Spearman's rho (Pearson correlation of average ranks, ties shared); nan when either is
    constant or shorter than 2."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError("spearman needs two sequences of the same length")
    if len(x) < 2:
        return math.nan
    rx, ry = _ranks(x), _ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry) / denominator if denominator > 0 else math.nan


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (1-based): tied values share the mean of their positions."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(1, len(values) + 1)
    uniques, inverse = np.unique(values, return_inverse=True)
    if len(uniques) < len(values):
        sums = np.bincount(inverse, weights=ranks)
        counts = np.bincount(inverse)
        ranks = (sums / counts)[inverse]
    return ranks


def aligned(a: TaskMap, b: TaskMap) -> tuple[np.ndarray, np.ndarray]:
    """The two maps' scores over the tokens with the same character offsets in both."""
    oa, ob = np.asarray(a.offsets).reshape(-1, 2), np.asarray(b.offsets).reshape(-1, 2)
    if oa.shape == ob.shape and np.array_equal(oa, ob):
        return np.asarray(a.scores, dtype=np.float64), np.asarray(b.scores, dtype=np.float64)
    where = {(int(s), int(e)): i for i, (s, e) in enumerate(ob)}
    pairs = [(i, where[(int(s), int(e))]) for i, (s, e) in enumerate(oa) if (int(s), int(e)) in where]
    ia = np.array([i for i, _ in pairs], dtype=np.int64)
    ib = np.array([j for _, j in pairs], dtype=np.int64)
    return np.asarray(a.scores, dtype=np.float64)[ia], np.asarray(b.scores, dtype=np.float64)[ib]


def merged(spans: Iterable[Span]) -> list[Span]:
    """Sorted, non-overlapping spans covering the same characters."""
    out: list[list[int]] = []
    for s, e in sorted((int(s), int(e)) for s, e in spans if e > s):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def covered(spans: Iterable[Span]) -> int:
    return sum(e - s for s, e in merged(spans))


def intersection(a: Iterable[Span], b: Iterable[Span]) -> int:
    """Characters in both span sets (one linear pass over the merged spans)."""
    a, b = merged(a), merged(b)
    i = j = total = 0
    while i < len(a) and j < len(b):
        total += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def peak_share(a: Sequence[Span], b: Sequence[Span]) -> float:
    """Share of a's peak characters that are peak characters of b too; nan when a has none."""
    size = covered(a)
    return intersection(a, b) / size if size else math.nan


def jaccard(a: Sequence[Span], b: Sequence[Span]) -> float:
    """Shared peak characters over the union; nan when neither has a peak."""
    union = covered([*a, *b])
    return intersection(a, b) / union if union else math.nan


# ---------------------------------------------------------------- one note


def note_specificity(maps: Sequence[TaskMap], params: SpecificityParams | None = None) -> NoteSpecificity:
    """How a note's maps differ across its tasks (module doc); one TaskMap per task. Peak
    overlaps are counted on one boolean character mask per task (numpy), so a note with many
    peaks and tasks costs a few vector operations per pair of tasks, not a loop over peaks."""
    params = params or SpecificityParams()
    n = len(maps)
    n_chars = max((int(e) for m in maps for _, e in m.peaks), default=0)
    masks = np.zeros((n, n_chars), dtype=bool)
    for i, m in enumerate(maps):
        for a, b in m.peaks:
            masks[i, int(a) : int(b)] = True
    sizes = masks.sum(1)
    both = masks.astype(np.int32) @ masks.T.astype(np.int32)  # shared peak characters of each pair
    rho = _same_token_rho(maps)
    pairs = []
    for i in range(n):
        for j in range(i + 1, n):
            if rho[i, j] != rho[i, j] and not _same_tokens(maps[i], maps[j]):  # nan: other tokens
                rho[i, j] = rho[j, i] = spearman(*aligned(maps[i], maps[j]))
            union = sizes[i] + sizes[j] - both[i, j]
            pairs.append(
                {
                    "a": maps[i].task,
                    "b": maps[j].task,
                    "spearman": _none(rho[i, j]),
                    "jaccard": float(both[i, j] / union) if union else None,
                }
            )
    tasks = []
    for i, m in enumerate(maps):
        others = [j for j in range(n) if j != i]
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = both[i, others] / sizes[i] if others and sizes[i] else np.array([])
        same = bool(others) and bool(sizes[i]) and bool(np.all(shares >= params.same_share))
        shared = []
        if others and m.peaks:
            everywhere = np.concatenate([[0], np.cumsum(masks[others].all(0))])  # peak chars of every other task
            shared = [
                (int(a), int(b))
                for a, b in m.peaks
                if b > a and (everywhere[int(b)] - everywhere[int(a)]) / (int(b) - int(a)) >= params.same_share
            ]
        tasks.append(
            TaskSpecificity(
                task=m.task,
                n_peaks=len(m.peaks),
                spearman_mean=_nanmean(rho[i, others]) if others else math.nan,
                peak_share_min=float(np.min(shares)) if len(shares) else math.nan,
                peak_share_mean=float(np.mean(shares)) if len(shares) else math.nan,
                same_as_all=same,
                shared_peaks=shared,
            )
        )
    return NoteSpecificity(tasks, pairs)


def _same_tokens(a: TaskMap, b: TaskMap) -> bool:
    oa, ob = np.asarray(a.offsets), np.asarray(b.offsets)
    return oa.shape == ob.shape and np.array_equal(oa, ob)


def _same_token_rho(maps: Sequence[TaskMap]) -> np.ndarray:
    """Spearman's rho of every pair of maps over the same tokens, from each map's ranks computed
    once (Pearson correlation of the centred ranks); nan for pairs over other tokens or with a
    constant map (then `spearman` decides)."""
    n = len(maps)
    rho = np.full((n, n), np.nan)
    ranked = {}
    for i, m in enumerate(maps):
        scores = np.asarray(m.scores, dtype=np.float64)
        if len(scores) >= 2:
            r = _ranks(scores)
            r = r - r.mean()
            norm = math.sqrt(float(r @ r))
            if norm > 0:
                ranked[i] = r / norm
    for i in ranked:
        for j in ranked:
            if j > i and _same_tokens(maps[i], maps[j]):
                rho[i, j] = rho[j, i] = float(ranked[i] @ ranked[j])
    return rho


# ---------------------------------------------------------------- across notes


_SPACE = re.compile(r"\s+")


def fold(text: str) -> str:
    """A peak's text for comparison across notes: lower case, runs of whitespace as one space."""
    return _SPACE.sub(" ", text).strip().lower()


def task_repetition(peak_texts: Mapping[object, Sequence[str]], params: SpecificityParams | None = None) -> dict:
    """How a task's peaks repeat across notes: {note: [peak texts]} -> peaks, notes, the share
    of peaks whose folded text also peaks in another note, and the most repeated texts with the
    number of notes they peak in."""
    params = params or SpecificityParams()
    in_notes: Counter = Counter()
    for texts in peak_texts.values():
        in_notes.update({fold(t) for t in texts if fold(t)})
    n_peaks = sum(len(texts) for texts in peak_texts.values())
    repeated = sum(1 for texts in peak_texts.values() for t in texts if in_notes[fold(t)] > 1)
    top = [(text, count) for text, count in in_notes.most_common(params.top_repeats) if count > 1]
    return {
        "notes": len(peak_texts),
        "peaks": n_peaks,
        "repeated_share": repeated / n_peaks if n_peaks else None,
        "top_repeated": [{"text": text, "notes": count} for text, count in top],
    }


class Summary:
    """Running totals over notes, for a job or a configuration: add(NoteSpecificity), result().
    Only notes with two or more tasks say anything about specificity; the others are counted."""

    def __init__(self):
        self.notes = self.single = self.pairs = self.same = self.with_peaks = 0
        self.rho: list[float] = []
        self.jaccard: list[float] = []

    def add(self, note: NoteSpecificity) -> None:
        if len(note.tasks) < 2:
            self.single += 1
            return
        self.notes += 1
        for t in note.tasks:
            self.pairs += 1
            self.with_peaks += t.n_peaks > 0
            self.same += t.same_as_all
        self.rho += [p["spearman"] for p in note.pairs if p["spearman"] is not None]
        self.jaccard += [p["jaccard"] for p in note.pairs if p["jaccard"] is not None]

    def result(self) -> dict:
        """spearman_mean: mean rank correlation between two tasks' maps of a note (lower = more
        task-specific); same_share: share of (note, task) pairs with peaks whose peaks are those
        of every other task of the note."""
        return {
            "notes": self.notes,
            "notes_with_one_task": self.single,
            "pairs": self.pairs,
            "pairs_with_peaks": self.with_peaks,
            "same_for_every_task": self.same,
            "same_share": self.same / self.with_peaks if self.with_peaks else None,
            "spearman_mean": float(np.mean(self.rho)) if self.rho else None,
            "jaccard_mean": float(np.mean(self.jaccard)) if self.jaccard else None,
        }


def _nanmean(values) -> float:
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else math.nan


def _none(value):
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else float(value)
