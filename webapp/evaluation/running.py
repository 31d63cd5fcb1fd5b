"""The worker side of an evaluation: compute the missing maps of each configuration, then score.

`execute(evaluation, get_model)` (the evaluation claimed by this attempt, see evaluations.claim)
runs inside a heartbeat (webapp.lifecycle.heartbeat): a thread beats for it every
WORK_HEARTBEAT_SECONDS whatever the batch in hand, so a slow batch (AttnLRP on a CPU) is never
taken for a lost worker. Then:
1. For each configuration, in the stored order (AttnLRP last), the planned pairs with no stored
   map are computed with ml.relevance.compute_relevance(loaded, notes, tasks, config) and
   upserted every STORE_EVERY prompts, whole notes (webapp.evaluation.maps), with progress after each batch.
   A pair whose prompt cannot be built (ValueError: e.g. an empty note) is skipped and listed
   in the result's `problems` (ids only). Cancel is honoured between batches.
   Maps already stored (by an earlier attempt, or by relevance jobs of the same configuration)
   are not computed again: a crash, a cancel or a lost worker loses at most one batch.
2. Scoring: for batches of SCORE_BATCH pairs, each configuration's maps, the note texts and the
   gold evidence (the union of the spans of the pair's annotations) become ml.localisation pairs
   of the group {method, explain, template, config_key}; ml.localisation.Evaluation scores them
   under the evaluation's peak profile, with the uniform and random baselines and the
   recommendation.
3. The result is stored (NaN as null):
   {"groups": [...], "baselines": {"uniform", "random"}, "recommended": {"choice", "reason"},
    "bootstrap": {...}, "configs": [{"key", ...RelevanceConfig fields}], "profile": "name vN",
    "peak_params": {...}, "n_pairs": planned pairs, "missing": {config key: pairs with no map},
    "pairs_without_gold": n, "stale_maps": n, "problems": ["note 3 x task 2 skipped (...)", ...]}

Memory: one batch of maps and texts at a time, plus five numbers per pair and configuration.
Nothing here logs or stores note text; errors name ids only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from itertools import islice

from ml.localisation import Evaluation, Pair, label, nan_to_none, peak_rule
from ml.peaks import map_fits
from ml.relevance import RelevanceConfig
from webapp.corpus.models import Annotation, Note, Task
from webapp.evaluation import evaluations, maps
from webapp.evaluation.evaluations import EvaluationError
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle.heartbeat import Heartbeat
from webapp.pipeline.chunks import compute_pairs, note_batches, relevance_compute

STORE_EVERY = 16  # prompts computed between two writes of maps (and of progress)
SCORE_BATCH = 1000  # pairs whose maps are read and scored at once
MAX_PROBLEMS = 50


def execute(evaluation: RelevanceEvaluation, get_model: Callable, compute: Callable | None = None) -> str:
    """Run a claimed evaluation to its end: "done", "cancelled", or "lost" (another attempt
    holds it now). Raises on failure; the caller records it (evaluations.fail)."""
    with Heartbeat(evaluation):
        return _execute(evaluation, get_model, compute)


def _execute(evaluation: RelevanceEvaluation, get_model: Callable, compute: Callable | None) -> str:
    if compute is None:
        compute = relevance_compute()
    configs = [RelevanceConfig.from_dict(c) for c in evaluation.configs]
    pairs = [(int(n), int(t)) for n, t in evaluation.pairs]
    todo = {config.key: _missing(evaluation, config, pairs) for config in configs}
    done = evaluation.total - sum(len(v) for v in todo.values())
    if not evaluations.report(evaluation, done=done, phase=f"{done} of {evaluation.total} prompts already stored"):
        return "lost"
    problems: list[str] = []
    if any(todo.values()):
        _check_process(configs, todo)
        try:
            loaded = get_model()
        except Exception as exc:  # a model that cannot be loaded: its own words (never note text)
            raise EvaluationError(
                f"Could not load model {evaluation.model_version.name} ({type(exc).__name__}): {str(exc)[:300]}"
            ) from exc
        computing_seconds, computed = 0.0, 0
        for index, config in enumerate(configs):
            for batch in note_batches(todo[config.key], STORE_EVERY):
                if evaluations.cancel_requested(evaluation):
                    return "cancelled" if evaluations.cancelled(evaluation) else "lost"
                started = time.perf_counter()
                results = _compute(loaded, compute, config, batch, problems)
                maps.store(evaluation.model_version, config, results)
                computing_seconds += time.perf_counter() - started
                computed += len(batch)
                done += len(batch)
                if not evaluations.report(
                    evaluation,
                    done=done,
                    seconds_per_prompt=computing_seconds / computed,
                    phase=f"computing {_config_label(config)} (configuration {index + 1} of {len(configs)})",
                ):
                    return "lost"
    if evaluations.cancel_requested(evaluation):
        return "cancelled" if evaluations.cancelled(evaluation) else "lost"
    if not evaluations.report(evaluation, phase="scoring"):
        return "lost"
    result = score(evaluation, configs, pairs)
    if result is None:
        return "lost"
    result["problems"] = problems[:MAX_PROBLEMS]
    return "done" if evaluations.finish(evaluation, nan_to_none(result)) else "lost"


def score(evaluation: RelevanceEvaluation, configs: Sequence[RelevanceConfig], pairs: Sequence[tuple]) -> dict | None:
    """ml.localisation's result for the stored maps of every configuration (see the module doc);
    None when this attempt lost the evaluation meanwhile (checked after every batch of pairs)."""
    profile = evaluation.profile
    scorer = Evaluation(peak_rule(profile.params), seed=evaluation.seed)
    missing = {config.key: 0 for config in configs}
    without_gold = stale = scored = 0
    it = iter(pairs)
    while batch := list(islice(it, SCORE_BATCH)):
        gold = _gold(batch)
        texts = dict(Note.objects.filter(pk__in={n for n, _ in batch}).values_list("pk", "text"))
        without_gold += sum(1 for pair in batch if not gold.get(pair) or pair[0] not in texts)
        for config in configs:
            arrays = maps.read(evaluation.model_version, config, batch)
            items = []
            for pair in batch:
                if pair not in arrays:
                    missing[config.key] += 1
                    continue
                note_id, task_id = pair
                if not gold.get(pair) or note_id not in texts:
                    continue
                offsets, scores = arrays[pair]
                if not map_fits(offsets, texts[note_id]):
                    stale += 1  # the note was edited after its map was computed
                    continue
                items.append(Pair(note_id, task_id, texts[note_id], offsets, scores, gold[pair]))
            scorer.add(group_of(config), items)
        scored += len(batch)
        if not evaluations.report(evaluation, phase=f"scoring: {scored} of {len(pairs)} pairs"):
            return None
    return {
        **scorer.result(),
        "configs": [{"key": config.key, **config.to_dict()} for config in configs],
        "profile": str(profile),
        "peak_params": profile.params.to_dict(),
        "n_pairs": len(pairs),
        "missing": missing,
        "pairs_without_gold": without_gold,
        "stale_maps": stale,
    }


def group_of(config: RelevanceConfig) -> dict:
    """A configuration's fields in ml.localisation's groups (and so in the recommendation)."""
    return {"method": config.method, "explain": config.explain, "template": config.template, "config_key": config.key}


def _config_label(config: RelevanceConfig) -> str:
    return label(group_of(config))


def _missing(evaluation, config, pairs) -> list[tuple[int, int]]:
    out, it = [], iter(pairs)
    while batch := list(islice(it, SCORE_BATCH)):
        have = maps.stored(evaluation.model_version, config, batch)
        out += [pair for pair in batch if pair not in have]
    return out


def _check_process(configs, todo) -> None:
    import ml.lrp

    if ml.lrp.is_patched() and any(c.method == "grad_input" and todo[c.key] for c in configs):
        raise EvaluationError(
            "Gradient x input needs a worker process that has not computed AttnLRP yet (lxt's patches stay in a "
            "process for good). Restart the relevance worker, then press Resume: the maps already stored are kept."
        )


def _compute(loaded, compute, config, batch, problems) -> list:
    """[((note_id, task_id), RelevanceResult), ...] of the batch. If the batch fails on a bad
    input (ValueError), each prompt is tried alone and those that fail are listed in problems."""
    texts = dict(Note.objects.filter(pk__in={n for n, _ in batch}).values_list("pk", "text"))
    descriptions = dict(Task.objects.filter(pk__in={t for _, t in batch}).values_list("pk", "description"))
    runnable = [pair for pair in batch if pair[0] in texts and pair[1] in descriptions]
    for note_id, task_id in sorted(set(batch) - set(runnable)):
        problems.append(f"Note {note_id} x task {task_id} skipped (the note or the task was deleted).")
    return compute_pairs(
        loaded, compute, runnable, texts, descriptions, config, problems, f" for {_config_label(config)}"
    )


def _gold(batch) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """The union of the evidence spans of each pair's annotations."""
    gold: dict[tuple[int, int], list[tuple[int, int]]] = {}
    wanted = set(batch)
    rows = (
        Annotation.objects.filter(note_id__in={n for n, _ in batch}, task_id__in={t for _, t in batch})
        .exclude(evidence=[])
        .values_list("note_id", "task_id", "evidence")
    )
    for note_id, task_id, evidence in rows:
        if (note_id, task_id) in wanted:
            gold.setdefault((note_id, task_id), []).extend((int(a), int(b)) for a, b in evidence)
    return gold
