"""Choosing peak thresholds the paper's way (docs/METHOD.md, section Peaks): clinicians look at the peaks of N
held-out notes under each setting of a grid and say whether they are semantically reasonable
for s_T; the setting with the most reasonable notes is recommended.

- Drawing: N (note, task) items with distinct notes, drawn with the seed from a stored random
  sample of the selection's maps (webapp.review.tuning.sample_for, 4 N maps or more), each note
  with the task of its sampled map. Stored in ValidationSet.items, in judging order. When the
  sample holds fewer than N distinct notes (many tasks a note, or maps gone since it was drawn),
  the rest are drawn with the seed from the other notes with maps of the selection, each with
  one of its tasks. A set holds fewer than N notes only when fewer notes of the corpus have such
  maps: their number is stored (notes_available) and the set says so (ValidationSet.shortfall).
- Held out: the notes of every validation set of a corpus not retired are returned by
  `validation_note_ids(corpus_id)`; dataset builds must leave them out (the builder calls it;
  see the review README), so the thresholds are not chosen on training notes.
- Retiring (`retire`): a set is never deleted; retired, its notes go back to later dataset
  builds (builds already made keep what they were built from), its items, judgements and tally
  stay as history, and no more answers are taken. Audited.
- Judging: item by item, setting by setting, blind (the page shows "highlight 3 of 8", not the
  numbers). Settings whose peaks are identical on a note are judged once: the answer is recorded
  for each of them.
- Tally: per (item, setting), the majority of the reviewers who judged it decides whether it is
  reasonable (a tie is not reasonable), unless a curator settled it. The recommended setting has
  the most reasonable notes; ties go to the setting listed first in the grid. Where the item has
  gold evidence spans, the automatic agreement is shown beside it: micro-averaged token F1 of the
  word-extended peaks against gold tokens (ml.metrics.peak_token_prf) and the mean relevance mass
  ratio on gold vs uniform (ml.metrics.relevance_mass_ratio) of the smoothed scores.
- Settling (`disputes`, `settle`): an (item, setting) whose reviewers split (two or more answers,
  not all alike) goes to the set's curators with every reviewer's answer beside the highlight; the
  curator's answer (ValidationVerdict) is final and replaces the majority in the tally. Audited
  (REVIEW_DECISION, kind "validation_verdict").
- Long notes: the round shows one window of the note at a time (webapp.lib.windows,
  `?window=K` as on the note page; the window is kept while the next question is on the same
  note). Peaks are found over the whole map under every setting (their count and "same
  highlight" compare whole notes); the HTML is built for the window's characters and peaks only,
  and a map cut by the model's context gets the note page's notice and marker where it stops.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ml.metrics import PRF, peak_token_prf, relevance_mass_ratio
from ml.peaks import PeakParams, peaks_of_arrays, smooth
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Note, Task
from webapp.lib import windows
from webapp.pipeline.models import RelevanceMap
from webapp.review import tuning
from webapp.review.models import ValidationJudgement, ValidationSet, ValidationVerdict
from webapp.review.noteview import MapReach, map_reach, reach_markers, window_html


class ValidationSetError(Exception):
    """A validation set that cannot be drawn; the message is shown as written."""


def validation_note_ids(corpus_id: int) -> set[int]:
    """Notes of the corpus held out for threshold validation: dataset builds must skip them."""
    ids: set[int] = set()
    for items in ValidationSet.objects.holding_out().filter(corpus_id=corpus_id).values_list("items", flat=True):
        ids.update(int(note_id) for note_id, _ in items)
    return ids


def draw(corpus, selection, *, name: str, size: int, seed: int, grid: list[dict], actor) -> ValidationSet:
    """A new set of `size` notes, or fewer when fewer notes have maps (see module doc)."""
    sample = tuning.sample_for(corpus, selection, size=max(tuning.SAMPLE_SIZE, 4 * size), seed=seed)
    if sample is None:
        raise ValidationSetError(_("No relevance maps for this model version, method and template in this corpus."))
    order = np.random.default_rng(seed).permutation(len(sample.map_ids)).tolist()
    pairs = dict(
        (pk, (n, t))
        for pk, n, t in RelevanceMap.objects.filter(pk__in=sample.map_ids).values_list("pk", "note_id", "task_id")
    )
    items, seen = [], set()
    for k in order:
        note_id, task_id = pairs.get(sample.map_ids[k], (None, None))
        if note_id is None or note_id in seen:
            continue
        seen.add(note_id)
        items.append([note_id, task_id])
        if len(items) == size:
            break
    available = None
    if len(items) < size:
        maps = selection.maps().filter(note__corpus=corpus, model_version=selection.model)
        items += _more_items(maps, seen, size - len(items), seed)
        if len(items) < size:
            available = maps.values("note_id").distinct().count()
    vset = ValidationSet.objects.create(
        corpus=corpus,
        model_version=selection.model,
        method=selection.method,
        template=selection.template,
        config_key=selection.config,
        name=name,
        seed=seed,
        size=size,
        items=items,
        notes_available=available,
        grid=grid,
        created_by=actor,
    )
    record(
        actor,
        AuditEvent.Action.REVIEW_DECISION,
        vset,
        kind="validation_set",
        items=len(items),
        asked=size,
        settings=len(grid),
        seed=seed,
    )
    return vset


def _more_items(maps, seen: set, wanted: int, seed: int) -> list[list[int]]:
    """`wanted` more (note, task) items from the notes with maps not in `seen`, drawn with the
    seed (the notes, then one task of each); fewer when fewer such notes exist."""
    rng = np.random.default_rng([seed, 1])
    others = list(maps.exclude(note_id__in=seen).order_by("note_id").values_list("note_id", flat=True).distinct())
    chosen = [others[k] for k in rng.permutation(len(others))[:wanted].tolist()]
    tasks = defaultdict(list)
    for note_id, task_id in (
        maps.filter(note_id__in=chosen).order_by("note_id", "task_id").values_list("note_id", "task_id")
    ):
        tasks[note_id].append(task_id)
    return [[note_id, tasks[note_id][int(rng.integers(len(tasks[note_id])))]] for note_id in chosen]


def retire(vset: ValidationSet, actor) -> bool:
    """Stop holding the set's notes out of dataset builds; keep the set and its judgements.
    False (nothing done) if it was already retired."""
    with transaction.atomic():
        done = ValidationSet.objects.filter(pk=vset.pk, retired__isnull=True).update(
            retired=timezone.now(), retired_by=actor
        )
        if done:
            judgements = ValidationJudgement.objects.filter(validation_set=vset).count()
            record(
                actor,
                AuditEvent.Action.REVIEW_DECISION,
                vset,
                kind="validation_set_retired",
                items=len(vset.items),
                judgements=judgements,
            )
    vset.refresh_from_db(fields=["retired", "retired_by"])
    return bool(done)


# ---------------------------------------------------------------- judging


@dataclass
class Item:
    position: int  # 0-based index of the item
    note: Note
    task: Task
    setting: int
    html: str  # of the window
    peaks: int  # in the whole note
    same_as: list  # other settings with identical peaks on this note
    found: bool
    window: windows.Window | None = None
    n_chars: int = 0
    shown: range = range(0)  # indices of the peaks overlapping the window
    reach: MapReach | None = None
    reach_window: int | None = None  # the window where the map starts or ends


def _arrays(vset, note_id, task_id):
    row = (
        RelevanceMap.objects.for_config(vset.method, vset.template, vset.config_key)
        .filter(note_id=note_id, task_id=task_id, model_version=vset.model_version)
        .with_arrays()
        .first()
    )
    return row[0] if row is not None else None


def spans_per_setting(vset, note, arrays) -> list[tuple]:
    """The word-extended character spans of the note's peaks under each setting of the grid."""
    if arrays is None:
        return [() for _ in vset.grid]
    return [
        peaks_of_arrays([(None, note.pk, 0)], [arrays], {note.pk: note.text}, setting)[0].char_spans
        for setting in grid_params(vset)
    ]


def grid_params(vset) -> list[PeakParams]:
    """The set's settings (stored as JSON objects) as PeakParams."""
    return [PeakParams.from_mapping(setting) for setting in vset.grid]


def next_item(vset, reviewer) -> tuple[int, int, int, int] | None:
    """(position, note_id, task_id, setting) of the first item and setting not judged yet."""
    judged = set(
        ValidationJudgement.objects.filter(validation_set=vset, reviewer=reviewer).values_list(
            "note_id", "task_id", "setting"
        )
    )
    for position, (note_id, task_id) in enumerate(vset.items):
        for setting in range(len(vset.grid)):
            if (note_id, task_id, setting) not in judged:
                return position, note_id, task_id, setting
    return None


def item(vset, position: int, setting: int, *, window=None, window_chars: int | None = None) -> Item:
    """The question on one item under one setting, showing one window of the note (`window`: an
    index; `window_chars` defaults to windows.WINDOW_CHARS)."""
    note_id, task_id = vset.items[position]
    note = Note.objects.get(pk=note_id)
    task = Task.objects.get(pk=task_id)
    arrays = _arrays(vset, note_id, task_id)
    spans = spans_per_setting(vset, note, arrays)
    gold = sorted(
        {
            (a, b)
            for ev in Annotation.objects.filter(note=note, task=task).values_list("evidence", flat=True)
            for a, b in ev or []
        }
    )
    text = note.text
    parts = windows.windows(text, window_chars)
    win = windows.pick(parts, window)
    offsets, scores = arrays if arrays is not None else ([], [])
    peaks = spans[setting]
    shown = windows.spans_in(peaks, win)
    reach = map_reach(text, offsets) if arrays is not None else None
    html = window_html(
        text,
        win,
        offsets,
        scores,
        [peaks[i] for i in shown],
        gold,
        first_peak=shown.start,
        markers=reach_markers(reach, win),
    )
    same = [s for s in range(len(vset.grid)) if s != setting and spans[s] == spans[setting]]
    question = Item(
        position, note, task, setting, html, len(peaks), same, arrays is not None, win, len(text), shown, reach
    )
    if reach is not None:
        question.reach_window = windows.holding(parts, reach.end if reach.cut_end else reach.start).index
    return question


def judge(vset, reviewer, *, position: int, setting: int, reasonable: bool) -> list[int]:
    """Record the answer for the item under `setting` and every setting with identical peaks on
    that note not yet judged by the reviewer; returns the settings recorded."""
    if vset.is_retired:
        raise ValidationSetError(_("This validation set is retired: it takes no more answers."))
    if not 0 <= position < len(vset.items) or not 0 <= setting < len(vset.grid):
        raise ValidationSetError(_("No such item or setting in this validation set."))
    note_id, task_id = vset.items[position]
    note = Note.objects.get(pk=note_id)
    spans = spans_per_setting(vset, note, _arrays(vset, note_id, task_id))
    already = set(
        ValidationJudgement.objects.filter(
            validation_set=vset, reviewer=reviewer, note_id=note_id, task_id=task_id
        ).values_list("setting", flat=True)
    )
    settings = [setting] + [
        s for s in range(len(vset.grid)) if s != setting and s not in already and spans[s] == spans[setting]
    ]
    with transaction.atomic():
        for s in settings:
            ValidationJudgement.objects.update_or_create(
                validation_set=vset,
                note_id=note_id,
                task_id=task_id,
                setting=s,
                reviewer=reviewer,
                defaults={"reasonable": reasonable},
            )
    record(
        reviewer,
        AuditEvent.Action.REVIEW_DECISION,
        vset,
        kind="validation",
        note=note_id,
        task=task_id,
        settings=settings,
        reasonable=reasonable,
    )
    return settings


# ---------------------------------------------------------------- tally


@dataclass
class SettingTally:
    index: int
    params: dict
    judged: int = 0  # items with at least one judgement
    reasonable: int = 0  # items found reasonable: the curator's answer, else the majority's
    settled: int = 0  # items a curator settled
    gold_items: int = 0
    f1: float = math.nan
    mass_ratio: float = math.nan
    recommended: bool = False


def _answers(vset) -> dict[tuple, list[tuple[str, bool]]]:
    """(note, task, setting) -> [(reviewer's username, reasonable)] of the set, by username."""
    answers: dict[tuple, list] = defaultdict(list)
    for note_id, task_id, setting, username, reasonable in (
        ValidationJudgement.objects.filter(validation_set=vset)
        .order_by("reviewer__username")
        .values_list("note_id", "task_id", "setting", "reviewer__username", "reasonable")
    ):
        answers[(note_id, task_id, setting)].append((username, reasonable))
    return answers


def majority(answers: list[tuple[str, bool]]) -> bool:
    """Reasonable when most reviewers said yes; a tie is not reasonable."""
    yes = sum(answer for _, answer in answers)
    return yes > len(answers) - yes


def split(answers: list[tuple[str, bool]]) -> bool:
    return len({answer for _, answer in answers}) > 1


def tally(vset) -> tuple[list[SettingTally], SettingTally | None]:
    """Per setting: judged and reasonable notes, automatic agreement with gold; the recommendation."""
    rows = [SettingTally(i, s) for i, s in enumerate(vset.grid)]
    verdicts = dict(
        ((n, t, s), r) for n, t, s, r in vset.verdicts.values_list("note_id", "task_id", "setting", "reasonable")
    )
    for key, answers in _answers(vset).items():
        setting = key[2]
        if setting < len(rows):
            rows[setting].judged += 1
            if key in verdicts:
                rows[setting].settled += 1
                rows[setting].reasonable += verdicts[key]
            else:
                rows[setting].reasonable += majority(answers)
    _agreement(vset, rows)
    best = None
    for row in rows:
        if row.judged and (best is None or row.reasonable > best.reasonable):
            best = row
    if best is not None:
        best.recommended = True
    return rows, best


# ---------------------------------------------------------------- settling split answers


@dataclass
class Dispute:
    """An (item, setting) on which the set's reviewers split, with every answer and the verdict."""

    position: int
    note_id: int
    task_id: int
    setting: int
    answers: list[tuple[str, bool]]  # (reviewer's username, reasonable), by username
    verdict: ValidationVerdict | None = None

    @property
    def majority(self) -> bool:
        return majority(self.answers)


def disputes(vset) -> list[Dispute]:
    """The set's split (item, setting)s, in judging order then grid order, settled or not."""
    answers = _answers(vset)
    verdicts = {(v.note_id, v.task_id, v.setting): v for v in vset.verdicts.select_related("curator")}
    found = []
    for position, (note_id, task_id) in enumerate(vset.items):
        for setting in range(len(vset.grid)):
            given = answers.get((note_id, task_id, setting), [])
            if split(given):
                found.append(
                    Dispute(position, note_id, task_id, setting, given, verdicts.get((note_id, task_id, setting)))
                )
    return found


def settle(vset, curator, *, position: int, setting: int, reasonable: bool) -> ValidationVerdict:
    """Record the curator's final answer on a split (item, setting); a change keeps the previous one."""
    if vset.is_retired:
        raise ValidationSetError(_("This validation set is retired: its tally is kept as it was."))
    if not 0 <= position < len(vset.items) or not 0 <= setting < len(vset.grid):
        raise ValidationSetError(_("No such item or setting in this validation set."))
    note_id, task_id = vset.items[position]
    given = _answers(vset).get((note_id, task_id, setting), [])
    if not split(given):
        yes = sum(answer for _, answer in given)
        no = len(given) - yes
        raise ValidationSetError(
            _(
                "Its reviewers did not split on note %(note)s under setting %(setting)s "
                "(%(yes)s yes, %(no)s no): there is nothing to settle."
            )
            % {"note": position + 1, "setting": setting + 1, "yes": yes, "no": no}
        )
    with transaction.atomic():
        verdict, created = ValidationVerdict.objects.select_for_update().get_or_create(
            validation_set=vset,
            note_id=note_id,
            task_id=task_id,
            setting=setting,
            defaults={"reasonable": reasonable, "curator": curator},
        )
        if not created and (verdict.reasonable != reasonable or verdict.curator_id != curator.pk):
            verdict.previous, verdict.reasonable, verdict.curator = verdict.reasonable, reasonable, curator
            verdict.version += 1
            verdict.save()
    record(
        curator,
        AuditEvent.Action.REVIEW_DECISION,
        vset,
        kind="validation_verdict",
        note=note_id,
        task=task_id,
        setting=setting,
        reasonable=reasonable,
        version=verdict.version,
    )
    return verdict


def _agreement(vset, rows: list[SettingTally]) -> None:
    items = {(n, t) for n, t in vset.items}
    gold: dict[tuple, set] = defaultdict(set)
    for note_id, task_id, evidence in (
        Annotation.objects.filter(note_id__in={n for n, _task in items})
        .exclude(evidence=[])
        .values_list("note_id", "task_id", "evidence")
    ):
        if (note_id, task_id) in items:
            gold[(note_id, task_id)].update((int(a), int(b)) for a, b in evidence)
    if not gold:
        return
    maps = list(
        RelevanceMap.objects.for_config(vset.method, vset.template, vset.config_key)
        .filter(note_id__in={n for n, _ in gold}, model_version=vset.model_version)
        .with_arrays("note_id", "task_id")
    )
    maps = [(n, t, arrays) for n, t, arrays in maps if (n, t) in gold]
    if not maps:
        return
    texts = dict(Note.objects.filter(pk__in={n for n, _, _ in maps}).values_list("pk", "text"))
    keys = [(None, n, t) for n, t, _ in maps]
    arrays = [a for _, _, a in maps]
    for row in rows:
        params = PeakParams.from_mapping(row.params)
        prf, ratios = PRF(0, 0, 0), []
        for peaks, (note_id, task_id, (offsets, scores)) in zip(peaks_of_arrays(keys, arrays, texts, params), maps):
            spans = sorted(gold[(note_id, task_id)])
            prf = prf + peak_token_prf(peaks.word_spans, offsets, spans)
            try:
                ratios.append(
                    relevance_mass_ratio(
                        smooth(scores, kernel_size=params.kernel_size, sigma=params.sigma), offsets, spans
                    )
                )
            except ValueError:
                pass
        row.gold_items = len(maps)
        row.f1 = prf.f1
        finite = [r for r in ratios if not math.isnan(r)]
        row.mass_ratio = sum(finite) / len(finite) if finite else math.nan


def adopt(vset, setting: int, name: str, actor):
    """Make a setting of the set a PeakProfile (a new version if the name exists)."""
    if not 0 <= setting < len(vset.grid):
        raise ValidationSetError(_("No such setting in this validation set."))
    return tuning.save_profile(name, PeakParams.from_mapping(vset.grid[setting]), actor, project=vset.corpus.project_id)


def progress(vset, reviewer) -> tuple[int, int]:
    """(judgements the reviewer made, judgements a full round needs)."""
    done = ValidationJudgement.objects.filter(validation_set=vset, reviewer=reviewer).count()
    return done, len(vset.items) * len(vset.grid)
