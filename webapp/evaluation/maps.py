"""The relevance maps of an evaluation's configurations: which are stored, store, read.

Maps are the pipeline's RelevanceMap rows, keyed by (note, task, model version, configuration
key): an evaluation reuses the maps of relevance jobs run with the same configuration, and a
job later reuses the evaluation's. Upserts go on the pipeline's own unique key
(`RelevanceMap.objects.store`), so a batch stored twice writes nothing twice. Maps written
here have no job. Pairs are looked up batch by batch (never every map of a corpus at once).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ml.relevance import RelevanceConfig
from webapp.pipeline.models import ModelVersion, RelevanceMap

Pair = tuple[int, int]  # (note id, task id)


def _maps(model_version: ModelVersion, config: RelevanceConfig, pairs: Sequence[Pair]):
    return RelevanceMap.objects.for_config(config.method, config.template, config.key).filter(
        model_version=model_version, note_id__in={n for n, _ in pairs}, task_id__in={t for _, t in pairs}
    )


def stored(model_version: ModelVersion, config: RelevanceConfig, pairs: Sequence[Pair]) -> set[Pair]:
    """The pairs (of a batch) that have a map for this model version and configuration."""
    wanted = set(pairs)
    return {pair for pair in _maps(model_version, config, pairs).values_list("note_id", "task_id") if pair in wanted}


def store(model_version: ModelVersion, config: RelevanceConfig, computed: Iterable) -> int:
    """Upsert maps for [((note_id, task_id), RelevanceResult), ...]; returns the count."""
    return RelevanceMap.objects.store(
        computed,
        model_version_id=model_version.pk,
        method=config.method,
        template=config.template,
        config_key=config.key,
    )


def read(model_version: ModelVersion, config: RelevanceConfig, pairs: Sequence[Pair]) -> dict:
    """{(note_id, task_id): (offsets, scores)} of the pairs (of a batch) that have a map."""
    wanted = set(pairs)
    rows = _maps(model_version, config, pairs).with_arrays("note_id", "task_id")
    return {(n, t): arrays for n, t, arrays in rows if (n, t) in wanted}
