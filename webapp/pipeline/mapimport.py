"""Import relevance maps computed outside the product into a model version's maps.

The file is JSON Lines, one map a line (the format: ml.relevance.imported, and
docs/ml-cli.md#imported-relevance-maps). `import_maps` reads the WHOLE file first: every line is
parsed, its note (external id in the corpus) and task (slug or description) looked up, and its
tokens checked against the model version's tokenizer in the product's own prompt (or its character
spans projected onto those tokens); a file with any bad line is refused with every bad line's
number and reason (up to MAX_PROBLEMS listed) and nothing is written. Then, in ONE transaction,
the maps are stored under the configuration RelevanceConfig(method="imported", template,
explain) of this model version, with a MapImport row naming the file, its source and its digest,
and an audit event: a failure half-way writes nothing.

Re-importing the same file (same SHA-256, corpus, model version and configuration) writes nothing
and returns the earlier import. Another file with maps of (note, task) pairs already imported
under this configuration is refused naming the lines, unless `replace` (then its maps replace
them, as a relevance job's recomputed map does).

`progress(lines)` is called every `progress_every` lines read and may raise to stop (nothing is
written then); `on_validated(maps)` before the write transaction; `on_written(map_import)` inside
it, after the maps, so a caller's own row (the uploaded file's job, webapp.pipeline.mapimport_jobs)
ends in the same transaction as the maps: both or neither. It may raise to roll everything back.

Synchronous (a command, or the "map import" kind's worker): tokenizing each line's prompt is the
cost; the tokenizer alone is loaded (no weights), and the validated maps are held in memory until
written. Nothing here logs note text or note ids; messages name line numbers, token positions and lengths.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from ml.jsonl import LineError, parse_line
from ml.relevance import IMPORTED, ConfigError, RelevanceConfig
from ml.relevance import imported as fmt
from webapp.audit.log import record, record_refused_import
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note, Task
from webapp.pipeline.models import MapImport, ModelVersion, RelevanceMap, StoredArrays

log = logging.getLogger(__name__)

MAX_PROBLEMS = 20  # bad lines listed in a refusal (all are counted)
PROGRESS_EVERY = 1000  # lines read between progress reports
LOOKUP_BATCH = 500  # lines whose notes are read in one query
STORE_BATCH = 500  # maps upserted in one statement


class MapImportError(ValueError):
    """A refused import: `problems` are (line number or None, reason), `count` how many in all."""

    def __init__(self, problems: list[tuple[int | None, str]], count: int | None = None):
        self.problems, self.count = problems, count if count is not None else len(problems)
        more = f" (and {self.count - len(problems)} more)" if self.count > len(problems) else ""
        lines = "; ".join(f"line {n}: {reason}" if n else reason for n, reason in problems)
        super().__init__(f"refused, nothing written: {lines}{more}")


@dataclass
class Outcome:
    map_import: MapImport
    created: bool  # False: the same file was imported before; nothing written


@dataclass(frozen=True)
class Tokenizer:
    """What the alignment needs of a model version: its tokenizer, the chat template keywords of
    its family and the note limit of its context (no weights)."""

    tokenizer: object
    chat_template_kwargs: dict
    max_note_tokens: int | None


def tokenizer_of(model_version: ModelVersion) -> Tokenizer:
    from transformers import AutoConfig, AutoTokenizer

    from ml.models import ModelError, family_for
    from ml.models.loading import resolve
    from webapp.pipeline.modelcache import ModelUnavailable, model_folder

    try:
        source, is_hub = resolve(model_folder(model_version.path), settings.MODEL_DIR)
        hf_config = AutoConfig.from_pretrained(source, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
        family = family_for(hf_config)
    except (ModelError, ModelUnavailable, OSError, ValueError) as exc:
        raise MapImportError([(None, f"cannot read model {model_version.name}'s tokenizer: {str(exc)[:300]}")]) from exc
    return Tokenizer(tokenizer, dict(family.chat_template_kwargs), fmt.context_limit_of(hf_config))


def file_digest(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def import_maps(
    path,
    *,
    corpus: Corpus,
    model_version: ModelVersion,
    template: str = "en",
    explain: str = "next",
    source: str = "",
    actor=None,
    replace: bool = False,
    file_name: str | None = None,
    progress: Callable[[int], None] | None = None,
    tokenizer: Tokenizer | None = None,
    progress_every: int = PROGRESS_EVERY,
    on_validated: Callable[[int], None] | None = None,
    on_written: Callable[[MapImport], None] | None = None,
) -> Outcome:
    """Validate the whole file, then store its maps at once (module doc). MapImportError if refused."""
    try:
        config = RelevanceConfig(method=IMPORTED, template=template, explain=explain)
    except ConfigError as exc:
        raise MapImportError([(None, str(exc))]) from None
    file_name = os.path.basename(file_name if file_name is not None else str(path))[:255]
    digest = file_digest(path)
    earlier = MapImport.objects.filter(
        corpus=corpus, model_version=model_version, config_key=config.key, digest=digest
    ).first()
    if earlier is not None:
        return Outcome(earlier, created=False)
    tokenizer = tokenizer or tokenizer_of(model_version)
    try:
        maps, lines, problems, count = _validate(
            Path(path), corpus, model_version, config, tokenizer, progress, progress_every
        )
        if not count and not replace:
            problems, count = _already_imported(maps, model_version, config)
        if not count and not maps:
            problems, count = [(None, "the file holds no map")], 1
    except MapImportError as exc:
        problems, count = exc.problems, exc.count
    if count:
        record_refused_import(actor, corpus.name, "relevance maps", count, [reason for _, reason in problems])
        raise MapImportError(problems, count)
    if on_validated:
        on_validated(len(maps))
    with transaction.atomic():
        made = MapImport.objects.create(
            corpus=corpus,
            model_version=model_version,
            config=config.to_dict(),
            config_key=config.key,
            source=source[:200],
            file_name=file_name,
            digest=digest,
            lines=lines,
            maps=len(maps),
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
        )
        items = [(pair, arrays) for pair, (_, arrays) in maps.items()]
        for start in range(0, len(items), STORE_BATCH):
            RelevanceMap.objects.store(
                items[start : start + STORE_BATCH],
                model_version_id=model_version.pk,
                method=config.method,
                template=config.template,
                config_key=config.key,
            )
        record(
            actor,
            AuditEvent.Action.IMPORT_MAPS,
            made,
            corpus=corpus.name,
            model_version=model_version.name,
            config_key=config.key,
            maps=len(maps),
            replace=replace,
        )
        if on_written:
            on_written(made)
    log.info("map import %s: %s maps into model version %s (%s)", made.pk, len(maps), model_version.pk, config.key)
    return Outcome(made, created=True)


def _validate(path: Path, corpus, model_version, config, tokenizer: Tokenizer, progress, every=PROGRESS_EVERY):
    """({(note_id, task_id): (line, StoredArrays)}, lines read, first problems, problem count)."""
    problems: list[tuple[int, str]] = []
    count = 0
    maps: dict[tuple[int, int], tuple[int, StoredArrays]] = {}
    tasks = _tasks(corpus)

    def problem(line_no, reason):
        nonlocal count
        count += 1
        if len(problems) < MAX_PROBLEMS:
            problems.append((line_no, reason))

    batch: list[tuple[int, fmt.MapLine]] = []
    lines = 0

    def flush():
        wanted = {item.note for _, item in batch}
        notes = {
            external: (pk, text)
            for pk, external, text in Note.objects.filter(corpus=corpus, external_id__in=wanted).values_list(
                "pk", "external_id", "text"
            )
        }
        for line_no, item in batch:
            if item.note not in notes:
                problem(line_no, f"unknown note: corpus {corpus.name} has no note with this external id")
                continue
            task = tasks.get(item.task) or tasks.get(item.task.lower())
            if task is None:
                problem(line_no, "unknown task: no task of this slug or description that the corpus's project may use")
                continue
            note_id, text = notes[item.note]
            pair = (note_id, task[0])
            if pair in maps:
                problem(line_no, f"the same note and task as line {maps[pair][0]}")
                continue
            try:
                expected = fmt.note_tokens(
                    tokenizer.tokenizer,
                    text,
                    task[1],
                    config,
                    max_note_tokens=tokenizer.max_note_tokens,
                    chat_template_kwargs=tokenizer.chat_template_kwargs,
                )
                raw = fmt.raw_scores(item, expected, len(text))
            except fmt.MapLineError as exc:
                problem(line_no, str(exc))
                continue
            maps[pair] = (line_no, StoredArrays(expected.offsets, fmt.final_scores(raw, config)))
        batch.clear()

    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise MapImportError([(None, f"cannot open the file ({exc.strerror})")]) from None
    with handle:
        for line_no, raw_line in enumerate(handle, start=1):
            try:
                text_line = raw_line.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                problem(line_no, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
                continue
            if not text_line.strip():
                continue
            lines += 1
            try:
                batch.append((line_no, fmt.parse(parse_line(text_line))))
            except (LineError, fmt.MapLineError) as exc:
                problem(line_no, str(exc))
            if len(batch) >= LOOKUP_BATCH:
                flush()
            if progress and lines % every == 0:
                progress(lines)
        flush()
    if progress:
        progress(lines)
    return maps, lines, problems, count


def _tasks(corpus) -> dict[str, tuple[int, str]]:
    """{slug, and lower-cased description: (task id, description)} of the tasks the corpus's project may use."""
    usable = Task.objects.filter(Q(project__isnull=True) | Q(project_id=corpus.project_id))
    out: dict[str, tuple[int, str]] = {}
    for pk, slug, description in usable.values_list("pk", "slug", "description"):
        out[slug] = (pk, description)
        out.setdefault(description.lower(), (pk, description))
    return out


def _already_imported(maps: dict, model_version, config) -> tuple[list, int]:
    """Lines whose pair already has a map of this imported configuration (refused without replace)."""
    pairs = list(maps)
    found: list[int] = []
    for start in range(0, len(pairs), LOOKUP_BATCH):
        chunk = pairs[start : start + LOOKUP_BATCH]
        stored = set(
            RelevanceMap.objects.for_config(config.method, config.template, config.key)
            .filter(model_version=model_version, note_id__in={n for n, _ in chunk}, task_id__in={t for _, t in chunk})
            .values_list("note_id", "task_id")
        )
        found += sorted(maps[pair][0] for pair in chunk if pair in stored)
    reason = (
        "this note and task already have an imported map of this configuration for this model version "
        "(import with replace to replace it)"
    )
    return [(n, reason) for n in found[:MAX_PROBLEMS]], len(found)
