"""Live threshold tuning: a corpus-level preview of a peak setting over a stored sample of maps,
and saving a setting as a named, versioned PeakProfile.

The sample: SAMPLE_SIZE map ids of one (corpus, model version, method, template), drawn
uniformly without replacement by numpy's seeded Generator from the matching map ids in id
order, stored once (MapSample) and reused, so every slider move reads the same maps and two
people see the same figures. Drawing reads the ids of every matching map once (one scan); it
is redrawn on request ("Redraw", e.g. after new relevance jobs). The decoded maps and texts of
a sample are kept in this process (a few MB) so a slider move costs only the peaks, and the
last results are kept too, so going back to a setting costs nothing. (A relevance job that
rewrites maps of a sample is seen after "Redraw".)

The preview applies the DSM rules of ml.masking (two peaks, left context, de-duplication) to
the sample's peaks: the share of note-task pairs with at least two peaks, the masked examples
the setting would produce, a few of them, and the histogram of peaks per pair.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np
from django.db import IntegrityError, transaction

from ml.masking import BuildStats, Group, PeakItem, build_examples
from ml.peaks import PeakParams, peaks_of_arrays
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.pipeline.models import PeakProfile, RelevanceMap
from webapp.review.models import MapSample

SAMPLE_SIZE = 2_000
SHOWN_EXAMPLES = 3
SNIPPET = 70  # characters of context either side of a shown mask
HISTOGRAM_BINS = [str(k) for k in range(10)] + ["10+"]
_CACHE: OrderedDict = OrderedDict()  # sample pk -> (keys, arrays, texts)
_CACHE_ENTRIES = 4
_RESULTS: OrderedDict = OrderedDict()  # (sample pk, parameters) -> Preview: a slider moved back costs nothing
_RESULT_ENTRIES = 64


@dataclass
class Preview:
    sample: MapSample
    params: PeakParams
    pairs: int = 0
    two_peaks: int = 0
    peaks: int = 0
    examples: int = 0
    duplicates: int = 0
    histogram: list = field(default_factory=list)  # [(label, count, percent of the largest bin)]
    shown: list = field(default_factory=list)  # [(before, label, after)]
    millis: float = 0.0
    cached: bool = False

    @property
    def share_two_peaks(self) -> float:
        return self.two_peaks / self.pairs if self.pairs else 0.0

    @property
    def share_percent(self) -> float:
        return 100 * self.share_two_peaks


def sample_for(corpus, selection, *, size: int = SAMPLE_SIZE, seed: int = 0, redraw: bool = False) -> MapSample | None:
    """The stored sample of the selection's maps; drawn now if there is none (or `redraw`)."""
    key = {
        "corpus": corpus,
        "model_version": selection.model,
        "method": selection.method,
        "template": selection.template,
        "config_key": selection.config,
        "seed": seed,
        "size": size,
    }
    if selection.model is None:
        return None
    existing = MapSample.objects.filter(**key).first()
    if existing is not None and not redraw:
        return existing
    ids = list(
        selection.maps()
        .filter(note__corpus=corpus, model_version=selection.model)
        .order_by("id")
        .values_list("id", flat=True)
    )
    if not ids:
        return None
    rng = np.random.default_rng(seed)
    chosen = sorted(np.asarray(ids)[rng.choice(len(ids), size=min(size, len(ids)), replace=False)].tolist())
    with transaction.atomic():
        MapSample.objects.filter(**key).delete()  # a redraw is a new row: cached arrays go by primary key
        return MapSample.objects.create(**key, population=len(ids), map_ids=chosen)


def _load(sample: MapSample):
    cached = _CACHE.get(sample.pk)
    if cached is not None:
        _CACHE.move_to_end(sample.pk)
        return cached
    rows = sorted(
        RelevanceMap.objects.filter(pk__in=sample.map_ids).with_arrays("id", "note_id", "task_id"),
        key=lambda r: (r[1], r[2]),
    )
    texts = dict(Note.objects.filter(pk__in={r[1] for r in rows}).values_list("pk", "text"))
    keys = [(r[0], r[1], r[2]) for r in rows]
    arrays = [r[3] for r in rows]
    _CACHE[sample.pk] = (keys, arrays, texts)
    while len(_CACHE) > _CACHE_ENTRIES:
        _CACHE.popitem(last=False)
    return keys, arrays, texts


def preview(sample: MapSample, params: PeakParams) -> Preview:
    key = (sample.pk, params)
    known = _RESULTS.get(key)
    if known is not None:
        _RESULTS.move_to_end(key)
        return replace(known, cached=True)
    result = _preview(sample, params)
    _RESULTS[key] = result
    while len(_RESULTS) > _RESULT_ENTRIES:
        _RESULTS.popitem(last=False)
    return result


def _preview(sample: MapSample, params: PeakParams) -> Preview:
    started = time.perf_counter()
    keys, arrays, texts = _load(sample)
    result = Preview(sample, params)
    groups_per_pair = Counter()
    items = []
    for peaks in peaks_of_arrays(keys, arrays, texts, params):
        if not peaks.fits:
            continue
        groups = [Group(c, w) for c, w in zip(peaks.char_spans, peaks.word_spans) if c[0] < c[1]]
        groups_per_pair[min(len(groups), 10)] += 1
        result.peaks += len(groups)
        items.append(PeakItem(str(peaks.note_id), str(peaks.task_id), texts[peaks.note_id], groups))
    stats = BuildStats()
    for example in build_examples(items, stats=stats):
        if len(result.shown) < SHOWN_EXAMPLES:
            a, b = example.char_span
            text = texts[int(example.note_id)]
            result.shown.append((_cut_left(text[:a]), example.label, _cut_right(text[b:])))
    result.pairs = stats.items
    result.two_peaks = stats.items_used
    result.examples = stats.examples
    result.duplicates = stats.duplicates
    top = max(groups_per_pair.values(), default=0)
    result.histogram = [
        (label, groups_per_pair[k], round(100 * groups_per_pair[k] / top) if top else 0)
        for k, label in enumerate(HISTOGRAM_BINS)
    ]
    result.millis = (time.perf_counter() - started) * 1000
    return result


def _cut_left(text: str) -> str:
    return text if len(text) <= SNIPPET else "…" + text[-SNIPPET:]


def _cut_right(text: str) -> str:
    return text if len(text) <= SNIPPET else text[:SNIPPET] + "…"


def save_profile(name: str, params: PeakParams, actor, *, project) -> PeakProfile:
    """A new PeakProfile `name` of `project` with the parameters: version 1, or the next version of
    the name among the profiles the project sees (its own and the shared ones)."""
    for attempt in range(3):
        try:
            with transaction.atomic():
                seen = PeakProfile.objects.of_project(getattr(project, "pk", project)).filter(name=name)
                version = (seen.order_by("-version").values_list("version", flat=True).first() or 0) + 1
                profile = PeakProfile.objects.create(
                    project_id=getattr(project, "pk", project),
                    name=name,
                    version=version,
                    created_by=actor,
                    **params.to_dict(),
                )
            break
        except IntegrityError:
            if attempt == 2:
                raise
    record(
        actor,
        AuditEvent.Action.REVIEW_DECISION,
        profile,
        kind="peak_profile",
        name=name,
        version=version,
        params=params.to_dict(),
    )
    return profile
