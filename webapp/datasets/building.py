"""Build a DatasetVersion's masked examples from stored relevance maps: the one place for it.

Steps (docs/METHOD.md, sections Peaks and Masking):
1. select the maps: the dataset's corpus, model version, method and template (and only its
   relevance jobs, if it names some); the task filter; held-out tasks (Task.held_out) are
   excluded unless `filters["exclude_held_out"]` is false; an optional note subset;
2. stream them ordered by (note, task), about BATCH_MAPS maps a query (`_map_batches`: a block
   of the corpus's note ids at a time, the block's maps in one join-free query on the note
   index; stale planner statistics, as right after a bulk load, are refreshed first); per
   batch: decode, ONE find_peaks_many call and the word extension with the note text
   (ml.peaks.peaks_of_rows: runs, words, trimming);
3. drop peaks that clinicians rejected (`rejected_char_spans`: webapp.review's decisions);
4. ml.masking.build_examples applies the two-peaks rule, the left-context rule, the
   de-duplication and the ablation modes;
5. MaskedExample rows are written WRITE_BATCH at a time (COPY on PostgreSQL).

Accounting (stats["pairs_accounting"], shown on the dataset page and written in the manifest):
every note-task pair (one relevance map) of the dataset's selection is counted once, where the
build decides about it: left out as a held-out task or as a note of a validation set (counted
by query before streaming: those maps are never read), skipped because the map no longer fits
its note, left out by the mode's peak rule (fewer than two peaks; `one_peak`: not exactly one),
left out because review rejections took it below that rule, nothing maskable, every example a
duplicate of an earlier note's; or kept. read = kept + the sum of the excluded counts.

De-duplication across tasks works per note: build_examples merges identical examples of one
note only while that note's maps come consecutively, so the stream is ordered by note and a
batch never splits a note (build_examples emits a note's examples when the next note starts,
which may be in the next batch).

Memory is bounded: one batch of maps with their notes' texts, one note's pending examples, one
write batch, the map ids of two notes, plus 8 bytes per note id of the corpus and build_examples'
ids of the notes seen (about 90 bytes a note in all). It does not grow with the examples: a later
note can repeat an example only if its text is an earlier note's (or both contain the mask token:
ml.masking), so before streaming one query finds the notes whose text another note of the corpus
(or of the note filter) also has (`notes_sharing_text`, their ids kept), and build_examples keeps
its 16-byte digest per emitted example (about 100 bytes each) only for those notes and for notes
containing the mask token: memory grows with the examples of such notes only. The texts never
accumulate.

Rebuild semantics: `build()` first deletes the version's examples, then writes the new ones in
committed batches. Readers go by the status: only a DONE version is shown, exported or trained
on. The same inputs give the same rows in the same order (maps in (note, task) order, the random
ablation seeded), so building twice (a build whose worker was killed, claimed again by another
worker; a retry after a failure) gives the same dataset, never duplicates. A failed or cancelled
build keeps no examples. From the pages, a finished version is never rebuilt in place: "build
again" makes version + 1 with the same settings (webapp.datasets.launch), so an exported
version stays as it was exported.

The build is a unit of long work (webapp.lifecycle): it runs inside a `Heartbeat`, reports
maps_done through it, and at each batch of maps stops if a cancel was asked for (it ends
cancelled, its examples deleted) or if its worker was presumed lost and the build taken over
(it writes nothing more). Each write batch is committed only while this attempt still holds
the version (its row locked meanwhile), so a worker presumed dead that wakes up can never add
rows beside those of the worker that took the build over: that worker deletes the version's
examples after its claim, and no older attempt writes after that.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import Counter

import numpy as np
from django.db import connection, transaction
from django.db.models import Count

from ml.masking import BuildStats, Group, MaskingMode, PeakItem, build_examples, pair_is_used
from ml.peaks import peaks_of_rows
from webapp.corpus.models import Note, Task
from webapp.datasets.models import BuildError, DatasetVersion, MaskedExample, config_key_of, dataset_config_key
from webapp.datasets.stats import SharedPeaks
from webapp.db.planner_stats import refresh_planner_stats
from webapp.db.postgres_copy import copy_rows
from webapp.lib.disk import disk_full
from webapp.lifecycle import units
from webapp.lifecycle.heartbeat import Heartbeat
from webapp.pipeline.models import RelevanceMap

logger = logging.getLogger(__name__)

BATCH_MAPS = 2_000  # maps per query (about: a batch holds whole notes)
NOTE_BLOCK_START, NOTE_BLOCK_MAX = 64, 20_000  # notes per query: first guess, largest
WRITE_BATCH = 2_000
_WORD = re.compile(r"\w+")

# Histogram bins: (label, lowest value in the bin); the last bin is open-ended.
GROUP_BINS = [(str(k), k) for k in range(10)] + [("10+", 10)]
CHAR_BINS = [("1", 1), ("2", 2), ("3-4", 3), ("5-9", 5), ("10-19", 10), ("20-49", 20), ("50-99", 50), ("100+", 100)]
WORD_BINS = [("0", 0), ("1", 1), ("2", 2), ("3", 3), ("4-5", 4), ("6-10", 6), ("11+", 11)]


class _Stopped(Exception):
    """The build stops at a batch boundary: cancelled, or no longer this attempt's."""


# ---------------------------------------------------------------- inputs


def select_maps(dataset: DatasetVersion, config_key: str = ""):
    """The relevance maps a dataset is built from (unordered)."""
    return maps_matching(
        dataset.corpus_id,
        dataset.model_version_id,
        dataset.method,
        dataset.template,
        list(dataset.jobs.values_list("pk", flat=True)),
        dataset.filters or {},
        config_key=config_key,
    )


def maps_matching(corpus_id, model_version_id, method: str, template: str, job_ids=(), filters=None, config_key=""):
    """Maps of a corpus by one model version, method, template and relevance configuration
    (`config_key`, else `config_key_of`), optionally only from some jobs, with the dataset
    filters applied (see webapp.datasets.models)."""
    config_key = config_key or config_key_of(corpus_id, model_version_id, method, template, job_ids)
    maps = _maps_of_any_corpus(model_version_id, method, template, job_ids, filters, config_key)
    return maps.filter(note__corpus_id=corpus_id)


def _maps_of_any_corpus(model_version_id, method, template, job_ids, filters, config_key: str):
    """The selection without the corpus (the stream takes its notes block by block): no join, so
    each query of the stream is a lookup on the note index."""
    filters = filters or {}
    maps = RelevanceMap.objects.for_config(method, template, config_key)
    maps = maps.filter(model_version_id=model_version_id)
    if job_ids:
        maps = maps.filter(job_id__in=job_ids)
    if filters.get("tasks"):
        maps = maps.filter(task_id__in=filters["tasks"])
    if filters.get("exclude_held_out", True):
        held_out = list(Task.objects.filter(held_out=True).values_list("pk", flat=True))
        if held_out:
            maps = maps.exclude(task_id__in=held_out)
    if filters.get("notes"):
        maps = maps.filter(note_id__in=filters["notes"])
    return maps


def notes_sharing_text(dataset: DatasetVersion) -> set[str]:
    """Ids (as strings, as build_examples names notes) of the dataset's candidate notes (its
    corpus's, or those of its note filter) whose text another of them also has: the only notes
    whose examples a later note can repeat, so the only ones build_examples keeps digests for.
    A superset of the notes streamed (maps, held-out notes are not looked at): harmless."""
    notes = Note.objects.filter(corpus_id=dataset.corpus_id)
    if (dataset.filters or {}).get("notes"):
        notes = notes.filter(pk__in=dataset.filters["notes"])
    # PostgreSQL's trigger keeps content_hash the SHA-256 of the text (corpus migration 0002);
    # SQLite has no such guard, so there the texts themselves are compared.
    key = "content_hash" if connection.vendor == "postgresql" else "text"
    shared = notes.values(key).annotate(copies=Count("pk")).filter(copies__gt=1).values(key)
    ids = notes.filter(**{f"{key}__in": shared}).values_list("pk", flat=True)
    return {str(pk) for pk in ids.iterator(chunk_size=20_000)}


def rejected_char_spans(note_ids, task_ids) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Clinicians' review decisions: {(note_id, task_id): [(start, end), ...]} of peaks rejected
    for that task, as half-open character spans of the note (none: nothing rejected).

    The builder removes every group overlapping a rejected span BEFORE the two-peaks rule: a
    rejected peak is never masked and does not count as a peak. Called once per batch with the
    batch's note and task ids. Which decisions make a span rejected (a curator's final decision
    on the span, else the latest decision per reviewer, majority, ties reject) is the review
    app's rule: webapp.review.decisions."""
    from webapp.review.decisions import rejected_spans

    return rejected_spans(note_ids, task_ids)


def validation_note_ids(corpus_id: int) -> set[int]:
    """Notes the review app holds back for threshold validation (its sets not retired): never in a dataset."""
    from webapp.review.validation import validation_note_ids as held_back

    return held_back(corpus_id)


# ---------------------------------------------------------------- the unit of work


def claim(dataset_id: int, worker: str = "") -> DatasetVersion | None:
    """Take a queued build, or one whose worker is lost, for this worker (webapp.lifecycle.units);
    None when there is nothing to do: held by a live worker, ended, cancelled or deleted."""
    return units.claim(DatasetVersion, dataset_id, worker, select_related=("profile",), maps_done=0)


def fail(dataset: DatasetVersion, exc: BaseException) -> str:
    """Record a failed build in plain words and keep no partial examples, if this attempt still
    holds it (a worker presumed dead never overwrites the one that took over). Returns the message."""
    message = plain_error(exc, dataset.pk)
    with transaction.atomic():
        if units.fail(dataset, message):
            MaskedExample.objects.filter(dataset_id=dataset.pk).delete()
    return message


def plain_error(exc: BaseException, dataset_id: int) -> str:
    if isinstance(exc, BuildError):
        return str(exc)
    if full := disk_full(exc):
        return (
            f"The build stopped: {full} ({type(exc).__name__}). No examples were kept. Free some space, "
            "then build again."
        )
    return (
        f"The build stopped because of an unexpected error ({type(exc).__name__}). No examples were kept. "
        f"The worker log has the details under dataset {dataset_id}; building again may work if the cause "
        f"was temporary."
    )


# ---------------------------------------------------------------- the build


def build(dataset: DatasetVersion, heart: Heartbeat | None = None) -> dict | None:
    """(Re)build a claimed dataset's examples and end it DONE; returns its statistics (see module
    doc), or None when it stopped early: cancelled (ended CANCELLED, no examples kept) or taken
    over by another worker (nothing more written). Runs inside `heart`, else its own Heartbeat."""
    if heart is None:
        with Heartbeat(dataset) as heart:
            return build(dataset, heart)
    try:
        stats = _build(dataset, heart)
    except _Stopped:
        return _stop(dataset, heart)
    if not units.finish(dataset, stats=stats, maps_done=dataset.maps_total):
        logger.warning("dataset %s: built, but no longer held by this worker; its end is not recorded", dataset.pk)
        return None
    logger.info(
        "dataset %s built: %s examples from %s maps in %.1f s",
        dataset.pk,
        stats["examples"],
        dataset.maps_total,
        stats["seconds"],
    )
    return stats


def _build(dataset: DatasetVersion, heart: Heartbeat) -> dict:
    started = time.perf_counter()
    with transaction.atomic():  # a rebuild starts from nothing, if this attempt still holds the version
        if not units.owned(dataset).select_for_update().exists():
            raise _Stopped
        MaskedExample.objects.filter(dataset=dataset).delete()
    config_key = dataset_config_key(dataset)  # once: every count and the stream read the same maps
    maps = select_maps(dataset, config_key)
    total = maps.count()
    if not total:
        raise BuildError(
            "No relevance maps match this dataset: check the corpus, model version, method, template, jobs and "
            "task filter (held-out tasks are left out unless included), or run a relevance job first."
        )
    tally = _Tally(config_key)
    shared = SharedPeaks()  # examples whose span peaked for every task of the note (webapp.datasets.stats)
    held_back = validation_note_ids(dataset.corpus_id)
    tally.held_out_task = _held_out_task_maps(dataset, config_key)
    tally.validation_set = maps.filter(note_id__in=held_back).count() if held_back else 0
    total -= tally.validation_set  # the maps the stream reads
    if not units.owned(dataset).update(maps_total=total, maps_done=0):
        raise _Stopped
    dataset.maps_total = total
    refresh_planner_stats(RelevanceMap, total)
    map_ids = _MapIds()
    build_stats = BuildStats()
    repeating = notes_sharing_text(dataset)
    items = _peak_items(dataset, tally, map_ids, heart, held_back, config_key, shared)
    writer = _Writer(dataset)
    for example in build_examples(
        items,
        mode=dataset.mode,
        mask_token=dataset.mask_token,
        seed=dataset.seed,
        stats=build_stats,
        repeating_notes=repeating,
    ):
        note_id, task_ids = int(example.note_id), [int(t) for t in example.tasks]
        start, end = example.char_span if example.char_span else (None, None)
        writer.add(
            (
                dataset.pk,
                note_id,
                task_ids,
                map_ids.get(note_id, task_ids[0]),
                example.masked_text,
                example.label,
                start,
                end,
            )
        )
        tally.example(example, task_ids)
        shared.example(note_id, task_ids)
    writer.flush()
    refresh_planner_stats(MaskedExample, build_stats.examples)  # exports read them next, by keyset
    return {**tally.result(build_stats, dataset, time.perf_counter() - started), **shared.result()}


def _held_out_task_maps(dataset, config_key: str) -> int:
    """Maps of the selection left out because their task is held out (0 when they are included)."""
    filters = dataset.filters or {}
    if not filters.get("exclude_held_out", True):
        return 0
    held_out = list(Task.objects.filter(held_out=True).values_list("pk", flat=True))
    if not held_out:
        return 0
    every = maps_matching(
        dataset.corpus_id,
        dataset.model_version_id,
        dataset.method,
        dataset.template,
        list(dataset.jobs.values_list("pk", flat=True)),
        {**filters, "exclude_held_out": False},
        config_key=config_key,
    )
    return every.filter(task_id__in=held_out).count()


def _stop(dataset: DatasetVersion, heart: Heartbeat) -> None:
    """End a build stopped at a batch boundary: cancelled without examples if a cancel was asked
    for and this attempt still holds it; otherwise (taken over) touch nothing."""
    with transaction.atomic():
        cancelled = not heart.lost and units.cancelled(dataset)
        if cancelled:
            MaskedExample.objects.filter(dataset_id=dataset.pk).delete()
    if cancelled:
        logger.info("dataset %s: build cancelled after %s maps", dataset.pk, dataset.maps_done)
    else:
        logger.warning(
            "dataset %s: build stopped, another worker took it over (attempt %s was lost)", dataset.pk, dataset.attempts
        )
    return None


def _peak_items(dataset, tally, map_ids, heart, held_back=None, config_key="", shared=None):
    """PeakItems of every selected map in (note, task) order (see `_map_batches`); after each
    batch the progress goes to the heartbeat and the build stops if cancelled or taken over.
    Pairs the mode's rule leaves out are tallied here, by whether review rejections did it."""
    done = 0
    for rows in _map_batches(dataset, held_back, config_key):
        note_ids = sorted({row[1] for row in rows})
        texts = dict(Note.objects.filter(pk__in=note_ids).values_list("pk", "text"))
        rejected = rejected_char_spans(note_ids, sorted({row[2] for row in rows}))
        for peaks in peaks_of_rows(rows, texts, dataset.profile.params):
            if not peaks.fits:
                tally.maps_not_fitting += 1
                continue
            groups = [
                Group(char_span=c, token_span=w) for c, w in zip(peaks.char_spans, peaks.word_spans) if c[0] < c[1]
            ]
            found = len(groups)
            spans = rejected.get((peaks.note_id, peaks.task_id))
            if spans:
                kept = [g for g in groups if not any(g.char_span[0] < b and a < g.char_span[1] for a, b in spans)]
                tally.peaks_rejected += len(groups) - len(kept)
                groups = kept
            tally.pair(len(groups))
            if shared is not None:
                shared.pair(peaks.note_id)
            if not pair_is_used(len(groups), dataset.mode):
                if pair_is_used(found, dataset.mode):
                    tally.pairs_rejected_by_review += 1
                else:
                    tally.pairs_peak_rule += 1
            map_ids.add(peaks.note_id, peaks.task_id, peaks.map_id)
            yield PeakItem(str(peaks.note_id), str(peaks.task_id), texts[peaks.note_id], groups)
        done += len(rows)
        tally.streamed = done
        dataset.maps_done = done
        heart.report(maps_done=done)
        if heart.cancelling or heart.lost:
            raise _Stopped


def _map_batches(dataset, held_back=None, config_key=""):
    """(map id, note id, task id, (offsets, scores)) rows of the selected maps in (note, task)
    order, about BATCH_MAPS a list, never splitting a note. The ids of the corpus's (chosen) notes
    are read once (8 bytes a note); then each block of note ids gets its maps in one query
    (note_id IN block, a lookup on the maps' unique key, which starts with the note; joined to
    the notes' offsets and the configuration by primary key). Blocks are resized
    after each query to hold about BATCH_MAPS maps (a sparse selection, e.g. one job over part of
    a corpus, gets large blocks of notes)."""
    filters = dataset.filters or {}
    job_ids = list(dataset.jobs.values_list("pk", flat=True))
    config_key = config_key or dataset_config_key(dataset)
    maps = _maps_of_any_corpus(dataset.model_version_id, dataset.method, dataset.template, job_ids, filters, config_key)
    maps = maps.order_by("note_id", "task_id").with_arrays("id", "note_id", "task_id")
    notes = Note.objects.filter(corpus_id=dataset.corpus_id)
    if filters.get("notes"):
        notes = notes.filter(pk__in=filters["notes"])
    note_ids = np.fromiter(notes.order_by("pk").values_list("pk", flat=True).iterator(chunk_size=20_000), np.int64)
    # Notes drawn for threshold validation are held out of every dataset build.
    held_back = validation_note_ids(dataset.corpus_id) if held_back is None else held_back
    if held_back:
        note_ids = note_ids[~np.isin(note_ids, np.fromiter(held_back, np.int64))]
    size, position = NOTE_BLOCK_START, 0
    while position < len(note_ids):
        block = note_ids[position : position + size].tolist()
        position += len(block)
        rows = list(maps.filter(note_id__in=block))
        if rows:
            yield rows
        grow = BATCH_MAPS / len(rows) if rows else 4
        size = max(1, min(NOTE_BLOCK_MAX, int(size * min(grow, 4))))


class _MapIds:
    """Map ids of the last two notes streamed: build_examples emits a note's examples only when
    the first item of the next note arrives, so older notes are never asked for again."""

    def __init__(self):
        self._by_note: dict[int, dict[int, int]] = {}

    def add(self, note_id: int, task_id: int, map_id: int) -> None:
        if note_id not in self._by_note:
            while len(self._by_note) > 1:
                del self._by_note[next(iter(self._by_note))]
            self._by_note[note_id] = {}
        self._by_note[note_id][task_id] = map_id

    def get(self, note_id: int, task_id: int) -> int | None:
        return self._by_note.get(note_id, {}).get(task_id)


class _Writer:
    """Buffers example rows and writes them WRITE_BATCH at a time, each batch committed with the
    dataset's row locked and still held by this attempt (else _Stopped: see module doc)."""

    COLUMNS = ("dataset_id", "note_id", "tasks", "relevance_map_id", "masked_text", "label", "char_start", "char_end")

    def __init__(self, dataset: DatasetVersion):
        self.dataset = dataset
        self.rows: list[tuple] = []

    def add(self, row: tuple) -> None:
        self.rows.append(row)
        if len(self.rows) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        with transaction.atomic():
            if not units.owned(self.dataset).select_for_update().exists():
                raise _Stopped
            if connection.vendor == "postgresql":
                # tasks, a JSON column, goes to COPY as its JSON text
                copy_rows(MaskedExample, self.COLUMNS, ((*r[:2], json.dumps(r[2]), *r[3:]) for r in self.rows))
            else:
                MaskedExample.objects.bulk_create(
                    [MaskedExample(**dict(zip(self.COLUMNS, row))) for row in self.rows],
                    batch_size=500,
                )
        self.rows.clear()


class _Tally:
    """The statistics a build stores in DatasetVersion.stats."""

    def __init__(self, config_key: str):
        self.config_key = config_key  # the relevance configuration of every map read
        self.groups_per_pair = Counter()
        self.span_chars = Counter()
        self.span_words = Counter()
        self.per_task = Counter()
        self.maps_not_fitting = 0
        self.peaks_rejected = 0
        self.streamed = 0  # maps the stream read
        self.held_out_task = 0  # maps never streamed: counted by query
        self.validation_set = 0
        self.pairs_peak_rule = 0  # left out by the mode's rule on their peaks as found
        self.pairs_rejected_by_review = 0  # met the rule until review rejections removed peaks
        self.char_total = 0
        self.char_max = 0
        self.masked = 0

    def pair(self, groups: int) -> None:
        self.groups_per_pair[groups] += 1

    def example(self, example, task_ids) -> None:
        self.per_task.update(task_ids)
        if example.char_span is None:
            return
        length = example.char_span[1] - example.char_span[0]
        self.masked += 1
        self.span_chars[length] += 1
        self.span_words[len(_WORD.findall(example.label))] += 1
        self.char_total += length
        self.char_max = max(self.char_max, length)

    def result(self, built: BuildStats, dataset, seconds: float) -> dict:
        slugs = dict(Task.objects.filter(pk__in=self.per_task).values_list("pk", "slug"))
        return {
            "maps": dataset.maps_total,
            "maps_not_fitting_note": self.maps_not_fitting,
            "pairs": built.items,
            "pairs_used": built.items_used,
            "pairs_two_or_more_peaks": sum(n for k, n in self.groups_per_pair.items() if k >= 2),
            "groups_per_pair": _histogram(self.groups_per_pair, GROUP_BINS),
            "peaks_rejected_by_review": self.peaks_rejected,
            "notes": built.notes,
            "notes_used": built.notes_kept,
            "candidates": built.candidates,
            "examples": built.examples,
            "duplicates_removed": built.duplicates,
            "merged_across_tasks": built.merged_across_tasks,
            "dropped_duplicate_notes": built.dropped_duplicate_notes,
            "examples_per_task": {slugs.get(pk, str(pk)): n for pk, n in self.per_task.most_common()},
            "span_chars": {
                "histogram": _histogram(self.span_chars, CHAR_BINS),
                "mean": round(self.char_total / self.masked, 2) if self.masked else None,
                "max": self.char_max if self.masked else None,
            },
            "span_words": {"histogram": _histogram(self.span_words, WORD_BINS)},
            "profile": dataset.profile.params.to_dict(),
            "config_key": self.config_key,
            "seconds": round(seconds, 3),
            "pairs_accounting": self.accounting(built, dataset.mode),
        }

    def accounting(self, built: BuildStats, mode: str) -> dict:
        """Every pair of the selection, kept or excluded by reason (see module doc):
        {"read": n, "kept": n, "excluded": [[reason, label, n], ...]}; read = kept + the excluded."""
        rule = "Not exactly one peak" if MaskingMode(mode) is MaskingMode.ONE_PEAK else "Fewer than two peaks"
        excluded = [
            ["held_out_task", "Held-out task", self.held_out_task],
            ["validation_set", "Note held back by a validation set", self.validation_set],
            ["map_not_fitting_note", "Map does not fit its note (note changed since relevance)", self.maps_not_fitting],
            ["peak_rule", rule, self.pairs_peak_rule],
            ["rejected_by_review", f"{rule} once review rejections are removed", self.pairs_rejected_by_review],
            [
                "nothing_maskable",
                "Nothing to mask (peaks only whitespace"
                + (", or no room for a random span)" if MaskingMode(mode) is MaskingMode.RANDOM else ")"),
                built.items_without_candidate,
            ],
            ["duplicate", "Every example a duplicate of an earlier note's", built.items_all_duplicates],
        ]
        # read: counted apart from the outcomes (queries + rows streamed), so the sum is a check
        read = self.held_out_task + self.validation_set + self.streamed
        return {"read": read, "kept": built.items_kept, "excluded": excluded}


def _histogram(counts: Counter, bins) -> list[list]:
    """[[label, count], ...] in bin order (a list: JSONB does not keep the order of keys)."""
    out = [[label, 0] for label, _ in bins]
    lows = [low for _, low in bins]
    for value, n in counts.items():
        k = max(i for i, low in enumerate(lows) if value >= low) if value >= lows[0] else 0
        out[k][1] += n
    return out
