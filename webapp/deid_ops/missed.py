"""An identifier the de-identifier missed, marked by a clinician on the review page.

    mark_missed(note, start, end, identifier_type, user) -> MissedResult

The span is snapped to whole words as peaks are (ml.peaks.words: widened to the words it
touches, then letters and digits at both edges), so a click in a word or a rough selection gives
the word or words. Its value is then replaced, every occurrence of it (case-insensitively, as
whole words, any run of whitespace between its words), in that note AND in every other note of
the same patient in the project: the notes whose metadata holds the patient under the policy's
`patient_field`, as imported (the value) or de-identified (its keyed hash). With no patient field,
or none on the note, only the note itself changes. The replacement is the project's replacer
(webapp.deid.policy.replacer_for: a tag, or the patient's one surrogate: the same in all of their
notes), so a surrogate made here matches the ones the corpus's de-identification made.

What points into a changed note's text follows it, carried by Replacement.map_span (a span after
an occurrence moves, one around it grows or shrinks with it, one inside it becomes the whole
replacement):
- gold evidence (corpus.Annotation.evidence) and brat entities kept in the note's metadata;
- review decisions (review.PeakDecision: the peak's span, the adjusted one and the adjusted one
  of the state undo goes back to), curators' decisions (review.Adjudication) and the peaks a
  review round drew (review.RoundPair.peaks). A decision's row is identified by its span: two rows
  of one reviewer whose spans become the same (they differed only inside the identifier) are one
  peak now, and the later decision is kept;
- relevance maps are token offsets of the old text: the changed notes' maps are deleted (with
  their stored peaks, review.MapPeaks, and the notes' NoteTokens) and computed again by relevance
  jobs launched through the usual lifecycle (webapp.pipeline.jobs.launch, planned and run by the
  workers, never in the request): one job per corpus, model version, relevance configuration and
  set of tasks, for exactly the notes and tasks that had maps, with the configuration they were
  made with (read from a job that made maps of it). A configuration no job records, other than a
  method's default, cannot be launched again: its maps are counted in `not_recomputed`.
Datasets already built keep the text they were built from: they are versions, rebuilt on purpose.

content_hash is set with the text; the search index follows the text through its triggers
(corpus migrations 0004 and 0008). Everything happens in one transaction, the notes locked first
(FOR UPDATE, in id order): two marks at once on one patient's notes run one after the other.
On PostgreSQL a trigger keeps every evidence span inside its note's text at every statement, so a
note that grows is written before its evidence moves, and one that shrinks after.

Audited (MISSED_IDENTIFIER on the note) with the type, the notes and occurrences changed and the
jobs launched. The VALUE is never written anywhere but the notes' text (and the encrypted mapping,
when the policy keeps one): not in the audit row, a log line, an error or a message.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F, Q, TextField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils.translation import gettext as _

from ml.deid.types import TYPES, Finding
from ml.peaks.words import snap_to_words
from ml.relevance import ConfigError, RelevanceConfig, default_config_key
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus, Note, Task, text_hash
from webapp.deid import mapping
from webapp.deid.policy import (
    PolicyError,
    map_ranges,
    note_key,
    patient_key,
    policy_of,
    replacement_pairs,
    replacer_for,
    stored_patient_key,
)
from webapp.pipeline import jobs
from webapp.pipeline.models import ModelVersion, NoteTokens, RelevanceJob, RelevanceMap
from webapp.review.models import Adjudication, PeakDecision, RoundPair

log = logging.getLogger(__name__)

MAX_CHARS = 200  # a missed identifier is a word or a few: a longer span is refused
PARK = 1_000_000_000  # added to spans while they move, so no row meets another's old span
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")  # a metadata key usable in a JSON lookup
_HASHED = re.compile(r"[0-9a-f]{16}")  # webapp.deid.policy.patient_hash


class MissedError(ValueError):
    """Nothing was replaced; the message says why in plain words (never the value)."""


class StaleNote(MissedError):
    """The note's text changed since the page showed it: its offsets no longer hold."""


@dataclass(frozen=True)
class MissedResult:
    note_id: int
    type: str
    notes: int  # notes whose text changed (the marked one among them)
    occurrences: int  # replacements made, in all of them
    patient_scope: bool  # the patient's other notes were looked for (a patient field and a value)
    maps: int  # relevance maps deleted
    jobs: tuple[int, ...]  # relevance jobs launched to compute them again
    not_recomputed: int  # deleted maps of a configuration no job records


def value_pattern(value: str) -> re.Pattern:
    """Whole-word, case-insensitive occurrences of `value`, any whitespace between its words."""
    body = r"\s+".join(re.escape(part) for part in value.split())
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def occurrences(text: str, pattern: re.Pattern) -> list[tuple[int, int]]:
    """Where `pattern` occurs in `text`, leaving out a tag's word ("NAME" in "[NAME]")."""
    found = []
    for match in pattern.finditer(text):
        a, b = match.span()
        if 0 < a and b < len(text) and text[a - 1] == "[" and text[b] == "]" and match.group().upper() in TYPES:
            continue
        found.append((a, b))
    return found


def mark_missed(
    note: Note, start: int, end: int, identifier_type: str, user, *, expected_hash: str = ""
) -> MissedResult:
    """Replace the identifier at [start, end) of `note` in the note and its patient's other notes
    (module docstring). `expected_hash`: the content_hash of the text the offsets were read from
    (the page's); a note changed since raises StaleNote. Raises MissedError, nothing changed."""
    if identifier_type not in TYPES:
        raise MissedError(_("Unknown identifier type; choose one of %(types)s.") % {"types": ", ".join(TYPES)})
    project = note.corpus.project
    policy = policy_of(project)
    if policy.keep_mapping and not mapping.key_set():
        raise MissedError(str(mapping.MappingKeyMissing()))
    with transaction.atomic():
        # the patient (metadata, which this never changes) first; then every note locked in id
        # order, the marked one among them, so two marks on one patient's notes never deadlock
        key, values = _patient(Note.objects.select_related("corpus").get(pk=note.pk), policy)
        key = key or note_key(note.external_id)  # no patient: the note's own key, as at import
        notes = _locked_notes(note, project.pk, policy, values)
        marked = next(other for other in notes if other.pk == note.pk)
        if expected_hash and expected_hash != marked.content_hash:
            raise StaleNote(_("The note has changed since this page was shown; nothing was replaced. Look again."))
        a, b = snap_to_words(marked.text, start, end)
        if a == b:
            raise MissedError(_("There is no word there to mark: put the cursor in a word, or select it."))
        if b - a > MAX_CHARS:
            raise MissedError(
                _("Mark a word or a few (at most %(limit)s characters), not a passage.") % {"limit": MAX_CHARS}
            )
        value = marked.text[a:b]
        pattern = value_pattern(value)
        canonical = " ".join(value.split()).lower()
        replacers: dict[str, object] = {}
        changed: list[tuple[Note, object]] = []
        pairs: list[tuple[str, str]] = []
        for other in notes:
            found = occurrences(other.text, pattern)
            if not found:
                continue
            language = other.corpus.language
            if language not in replacers:
                replacers[language] = _replacer(project, language, policy)
            findings = [Finding(identifier_type, s, e, recognizer="review", canonical=canonical) for s, e in found]
            replacement = replacers[language].replace(other.text, findings, patient=key)
            if replacement.spans and replacement.text != other.text:
                changed.append((other, replacement))
                pairs.extend(replacement_pairs(replacement))
        if not changed:
            raise MissedError(_("Nothing to replace there: no word of its own, or a tag already."))
        for other, replacement in changed:
            _rewrite(other, replacement)
        if policy.keep_mapping and key and pairs:
            mapping.merge(project.pk, key, pairs)
        changed_ids = sorted(other.pk for other, _ in changed)
        maps, launched, not_recomputed = _recompute(changed_ids, user)
        result = MissedResult(
            note_id=marked.pk,
            type=identifier_type,
            notes=len(changed),
            occurrences=sum(len(r.spans) for _, r in changed),
            patient_scope=bool(values),
            maps=maps,
            jobs=tuple(launched),
            not_recomputed=not_recomputed,
        )
        record(
            user,
            AuditEvent.Action.MISSED_IDENTIFIER,
            marked,
            note=marked.pk,
            type=identifier_type,
            notes=result.notes,
            occurrences=result.occurrences,
            note_ids=changed_ids,
            maps=maps,
            jobs=list(launched),
        )
    log.info(
        "missed identifier (%s) on note %s: %s occurrences replaced in %s notes, %s maps to compute again",
        identifier_type,
        marked.pk,
        result.occurrences,
        result.notes,
        maps,
    )
    return result


# ---------------------------------------------------------------- the patient's notes


def _patient(note: Note, policy) -> tuple[str, set[str]]:
    """(the key the patient's surrogates are kept under, the metadata values their notes carry:
    the value as imported and its keyed hash, as a de-identified corpus stores it); ("", set())
    without a patient field or a value in it."""
    field = policy.patient_field
    if not field or not _KEY.match(field) or "__" in field:
        return "", set()
    stored = stored_patient_key(note.metadata, policy)
    if not stored:
        return "", set()
    if note.corpus.deidentified and _HASHED.fullmatch(stored):
        return stored, {stored}  # a de-identified note: its patient field holds the hash
    key = patient_key(note.metadata, policy)
    return key, {stored, key}


def _locked_notes(note: Note, project_id: int, policy, values: set[str]) -> list[Note]:
    """The note and its patient's other notes in the project, locked, in id order."""
    notes = Note.objects.filter(pk=note.pk)
    if values:
        patient = Cast(KT(f"metadata__{policy.patient_field}"), TextField())
        notes = (
            Note.objects.filter(corpus__project_id=project_id)
            .annotate(patient=patient)
            .filter(Q(patient__in=sorted(values)) | Q(pk=note.pk))
        )
    return list(notes.select_for_update(of=("self",)).select_related("corpus").order_by("pk"))


def _replacer(project, language: str, policy):
    """The project's replacer for the language; tags need no language, so a corpus in a
    language the de-identifier does not read still gets them."""
    try:
        return replacer_for(project, language, policy)
    except PolicyError as exc:
        if policy.mode != policy.Mode.TAGS:
            raise MissedError(str(exc)) from None
        return replacer_for(project, "en", policy)


# ---------------------------------------------------------------- the text and what points into it


def _rewrite(note: Note, replacement) -> None:
    """The note's new text, and every offset stored against it carried into it."""
    grows = len(replacement.text) >= len(note.text)
    if grows:
        _write_text(note, replacement)
    _carry_evidence(note, replacement)
    if not grows:
        _write_text(note, replacement)
    _carry_decisions(note, replacement)
    _carry_adjudications(note, replacement)
    _carry_round_pairs(note, replacement)


def _write_text(note: Note, replacement) -> None:
    metadata = note.metadata
    brat = metadata.get("brat") if isinstance(metadata, dict) else None
    if isinstance(brat, dict) and isinstance(brat.get("entities"), list):
        entities = [
            {**entity, "spans": map_ranges(replacement, entity.get("spans", []), merge=True)}
            if isinstance(entity, dict)
            else entity
            for entity in brat["entities"]
        ]
        metadata = {**metadata, "brat": {**brat, "entities": entities}}
    Note.objects.filter(pk=note.pk).update(
        text=replacement.text, content_hash=text_hash(replacement.text), metadata=metadata
    )


def _carry_evidence(note: Note, replacement) -> None:
    annotations = list(Annotation.objects.filter(note_id=note.pk).only("pk", "evidence"))
    for annotation in annotations:
        annotation.evidence = [list(replacement.map_span(int(a), int(b))) for a, b in annotation.evidence or []]
    Annotation.objects.bulk_update(annotations, ["evidence"])


def _carry_decisions(note: Note, replacement) -> None:
    rows = list(PeakDecision.objects.filter(note_id=note.pk).order_by("-updated", "-pk"))
    if not rows:
        return
    for row in rows:
        row.start, row.end = replacement.map_span(row.start, row.end)
        if row.adjusted_start is not None:
            row.adjusted_start, row.adjusted_end = replacement.map_span(row.adjusted_start, row.adjusted_end)
        previous = row.previous
        if isinstance(previous, dict) and previous.get("adjusted_start") is not None:
            a, b = replacement.map_span(previous["adjusted_start"], previous["adjusted_end"])
            row.previous = {**previous, "adjusted_start": a, "adjusted_end": b}
    identity = ("task_id", "model_version_id", "method", "template", "config_key", "start", "end", "reviewer_id")
    kept = _one_per_key(rows, identity)
    _park(PeakDecision, note)
    PeakDecision.objects.bulk_update(kept, ["start", "end", "adjusted_start", "adjusted_end", "previous"])


def _carry_adjudications(note: Note, replacement) -> None:
    rows = list(Adjudication.objects.filter(note_id=note.pk).order_by("-updated", "-pk"))
    if not rows:
        return
    for row in rows:
        row.start, row.end = replacement.map_span(row.start, row.end)
    kept = _one_per_key(rows, ("task_id", "start", "end"))
    _park(Adjudication, note)
    Adjudication.objects.bulk_update(kept, ["start", "end"])


def _carry_round_pairs(note: Note, replacement) -> None:
    pairs = list(RoundPair.objects.filter(note_id=note.pk).only("pk", "peaks"))
    for pair in pairs:
        pair.peaks = [list(replacement.map_span(int(a), int(b))) for a, b in pair.peaks or []]
    RoundPair.objects.bulk_update(pairs, ["peaks"])


def _one_per_key(rows: list, fields: tuple[str, ...]) -> list:
    """The rows (latest first) whose key is not a later row's: the others are deleted, now."""
    seen, kept, dropped = set(), [], []
    for row in rows:
        key = tuple(getattr(row, name) for name in fields)
        (dropped if key in seen else kept).append(row)
        seen.add(key)
    if dropped:
        type(rows[0]).objects.filter(pk__in=[row.pk for row in dropped]).delete()
    return kept


def _park(model, note: Note) -> None:
    """Move the note's rows out of the way first: a unique span is checked row by row, so a row
    moving onto the span another row is about to leave would be refused."""
    model.objects.filter(note_id=note.pk).update(start=F("start") + PARK, end=F("end") + PARK)


# ---------------------------------------------------------------- relevance maps


def _recompute(note_ids: list[int], user) -> tuple[int, list[int], int]:
    """Delete the notes' maps and launch jobs computing them again: (maps deleted, jobs
    launched, maps of a configuration that cannot be launched again)."""
    rows = list(
        RelevanceMap.objects.filter(note_id__in=note_ids).values_list(
            "note_id",
            "task_id",
            "model_version_id",
            "config__method",
            "config__template",
            "config__config_key",
            "note__corpus_id",
        )
    )
    wanted: dict[tuple, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for note_id, task_id, model_id, method, template, key, corpus_id in rows:
        wanted[(corpus_id, model_id, method, template, key)][note_id].add(task_id)
    RelevanceMap.objects.filter(note_id__in=note_ids).delete()  # their stored peaks go with them
    NoteTokens.objects.filter(note_id__in=note_ids).delete()
    launched, not_recomputed = [], 0
    for (corpus_id, model_id, method, template, key), by_note in sorted(wanted.items()):
        config = _stored_config(method, template, key)
        if config is None:
            not_recomputed += sum(len(tasks) for tasks in by_note.values())
            continue
        by_tasks: dict[frozenset, list[int]] = defaultdict(list)
        for note_id, tasks in by_note.items():
            by_tasks[frozenset(tasks)].append(note_id)
        corpus, model = Corpus.objects.get(pk=corpus_id), ModelVersion.objects.get(pk=model_id)
        for tasks, ids in sorted(by_tasks.items(), key=lambda item: sorted(item[1])):
            spec = _spec(config, corpus, model, list(Task.objects.filter(pk__in=tasks)), sorted(ids))
            if spec.config().key != key:  # a setting a launch cannot give (none the app sets)
                not_recomputed += len(ids) * len(tasks)
                continue
            try:
                launched.append(jobs.launch(spec, user).pk)
            except jobs.JobError as exc:
                log.warning("maps of notes %s could not be launched again: %s", sorted(ids), exc)
                not_recomputed += len(ids) * len(tasks)
    return len(rows), launched, not_recomputed


def _stored_config(method: str, template: str, key: str) -> RelevanceConfig | None:
    """The relevance configuration whose key is `key`: a job's that made maps of it, else the
    method's default when that is it; None when no job records it."""
    stored = (
        RelevanceJob.objects.filter(config_key=key, method=method, template=template)
        .exclude(config={})
        .order_by("-created")
        .values_list("config", flat=True)
        .first()
    )
    try:
        config = RelevanceConfig.from_dict(stored) if stored else RelevanceConfig(method=method, template=template)
    except (ConfigError, TypeError, ValueError):
        return None
    if not stored and key != default_config_key(method, template):
        return None
    return config if config.key == key else None


def _spec(config: RelevanceConfig, corpus, model, tasks: list, note_ids: list[int]) -> jobs.JobSpec:
    return jobs.JobSpec(
        corpus=corpus,
        model_version=model,
        method=config.method,
        template=config.template,
        explain=config.explain,
        neutral=config.neutral if config.explain == RelevanceJob.Explain.CONTRASTIVE else "",
        normalise=config.normalise,
        truncate=config.truncate,
        dtype=config.dtype,
        task_selection=RelevanceJob.TaskSelection.LIST,
        tasks=tasks,
        note_filter={"ids": note_ids},
    )
