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
   Imported maps (method "imported", webapp.pipeline.mapimport) are never computed: a planned pair
   without one counts in `missing`.
   Maps already stored (by an earlier attempt, or by relevance jobs of the same configuration)
   are not computed again: a crash, a cancel or a lost worker loses at most one batch.
2. Scoring: for batches of SCORE_BATCH pairs, each configuration's maps, the note texts and the
   gold evidence (the union of the pair's spans from every gold source, webapp.evaluation.gold_sources:
   its annotations' evidence, and the peaks kept and spans added in review) become ml.localisation pairs
   of the group {method, explain, template, config_key}; ml.localisation.Evaluation scores them
   under the evaluation's peak profile, with the uniform and random baselines and the
   recommendation.
   The same pass measures task-specificity (ml.specificity) per configuration: each note's
   maps of its planned tasks, peaks under the profile, compared across the tasks (whole notes
   per batch: webapp.pipeline.chunks.note_batches), and per task how its peak texts repeat
   across notes (`specificity`: {config key: {...Summary, "tasks": {task: repetition}}}).
2b. Faithfulness (evaluation.faithfulness): for batches of FAITH_BATCH pairs, each
   configuration's STORED map is scored by ml.faithfulness (its ModelScorer on the same prompt;
   a map whose tokens are not the prompt's, e.g. of an edited note, is skipped and listed),
   PASSES_PER_PAIR forward passes a pair (the map's rows and RANDOM_DRAWS random rankings'); the
   summary, with the paired differences method - random, is taken over every batch's records.
   Cancel is honoured between batches; progress
   goes to `phase`, `seconds_per_pass` and the stage (below). `faithfulness`: {config key:
   summary + "verdict" + "forward_passes"}.
3. The recommendation (ml.choosing) weighs localisation (where gold exists), faithfulness (when
   measured) and specificity, and says which it used; `localisation_recommended` keeps
   ml.localisation's own.
4. The result is stored (NaN as null):
   {"groups": [...], "baselines": {"uniform", "random"}, "recommended": {"choice", "reason"},
    "bootstrap": {...}, "configs": [{"key", ...RelevanceConfig fields}], "profile": "name vN",
    "peak_params": {...}, "n_pairs": planned pairs, "missing": {config key: pairs with no map},
    "pairs_without_gold": n, "stale_maps": n, "problems": ["note 3 x task 2 skipped (...)", ...],
    "gold_origins": {origin: {"spans", "pairs"}}: the planned pairs' gold by origin ("imported",
    "accepted_peak", "added_span", "curator")}

Progress by stage (RelevanceEvaluation.stage): MAPS counts the prompts (`done` of `total`, timed
by `seconds_per_prompt`), FAITHFULNESS the pairs x configurations scored, SCORING the pairs
scored; each stage reports its `stage_done` of `stage_total` and the seconds it took this attempt
(`stage_seconds`), so the page's time left is the stage's own and never "0 s left" while the
faithfulness passes run after the last map.

Memory: one batch of maps and texts at a time, plus five numbers per pair and configuration.
Nothing here logs or stores note text; errors name ids only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from itertools import islice

import numpy as np

from ml.choosing import choose
from ml.faithfulness import (
    FaithfulnessConfig,
    ModelScorer,
    PairInput,
    neutral_token_id,
    summarise,
    verdicts,
)
from ml.faithfulness import evaluate as faithfulness_evaluate
from ml.localisation import Evaluation, Pair, label, nan_to_none, peak_rule
from ml.peaks import map_fits, peaks_of_arrays
from ml.relevance import IMPORTED, RelevanceConfig
from ml.specificity import Summary, TaskMap, note_specificity, task_repetition
from webapp.corpus.models import Note, Task
from webapp.evaluation import evaluations, gold_sources, maps
from webapp.evaluation.evaluations import EvaluationError
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle import units
from webapp.lifecycle.heartbeat import beating
from webapp.pipeline import releases
from webapp.pipeline.chunks import compute_pairs, note_batches, relevance_compute
from webapp.pipeline.modelcache import ModelUnavailable, loaded_model

log = logging.getLogger(__name__)

STORE_EVERY = 16  # prompts computed between two writes of maps (and of progress)
FAITH_BATCH = 8  # pairs scored for faithfulness between two progress reports (and cancel checks)
SCORE_BATCH = 1000  # pairs whose maps are read and scored at once
MAX_PROBLEMS = 50


def run_claimed(evaluation: RelevanceEvaluation, heart) -> str | releases.Released:
    """The runner's work for a claimed evaluation (kind "evaluation", workers.runner): execute with
    the worker's model; a worker that cannot load it gives the evaluation back for another worker
    (Released: sent again later), or ends it cancelled when a cancel was asked meanwhile."""
    try:
        return execute(evaluation, lambda: loaded_model(evaluation.model_version), heart=heart)
    except ModelUnavailable as exc:
        released = evaluations.release_unloadable(evaluation, str(exc))
        if released is not None:
            return released
        if evaluations.cancelled(evaluation):  # cancel asked meanwhile: honoured, not queued again
            return "cancelled"
        log.info("evaluation %s: %s; this attempt stops", evaluation.pk, units.fate(evaluation))
        return "taken over"


def execute(evaluation: RelevanceEvaluation, get_model: Callable, compute: Callable | None = None, heart=None) -> str:
    """Run a claimed evaluation to its end: "done", "cancelled", or "lost" (another attempt
    holds it now). Raises on failure; the caller records it (evaluations.fail_unexpectedly), or
    releases the evaluation for another worker on ModelUnavailable from get_model
    (evaluations.release_unloadable). Beats with `heart`, else a Heartbeat of its own."""
    with beating(evaluation, heart):
        return _execute(evaluation, get_model, compute)


def _execute(evaluation: RelevanceEvaluation, get_model: Callable, compute: Callable | None) -> str:
    if compute is None:
        compute = relevance_compute()
    configs = [RelevanceConfig.from_dict(c) for c in evaluation.configs]
    pairs = [(int(n), int(t)) for n, t in evaluation.pairs]
    todo = {config.key: _missing(evaluation, config, pairs) for config in configs}
    done = evaluation.total - sum(len(v) for v in todo.values())
    maps_stage = {"stage": RelevanceEvaluation.Stage.MAPS, "stage_total": evaluation.total, "stage_seconds": None}
    if not evaluations.report(
        evaluation,
        done=done,
        stage_done=done,
        **maps_stage,
        phase=f"{done} of {evaluation.total} prompts already stored",
    ):
        return "lost"
    problems: list[str] = []
    held = []

    def model():
        if not held:
            try:
                held.append(get_model())
            except ModelUnavailable:  # another worker may load it: the caller releases the evaluation
                raise
            except Exception as exc:  # a model that cannot be loaded: its own words (never note text)
                raise EvaluationError(
                    f"Could not load model {evaluation.model_version.name} ({type(exc).__name__}): {str(exc)[:300]}"
                ) from exc
        return held[0]

    if any(todo.values()):
        _check_process(configs, todo)
        loaded = model()
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
                    stage_done=done,
                    **maps_stage,
                    seconds_per_prompt=computing_seconds / computed,
                    phase=f"computing {_config_label(config)} (configuration {index + 1} of {len(configs)})",
                ):
                    return "lost"
    if evaluations.cancel_requested(evaluation):
        return "cancelled" if evaluations.cancelled(evaluation) else "lost"
    faithful = {}
    if evaluation.faithfulness:
        faithful = faithfulness(evaluation, configs, pairs, model, problems)
        if isinstance(faithful, str):
            return faithful
    if not evaluations.report(
        evaluation,
        phase="scoring",
        stage=RelevanceEvaluation.Stage.SCORING,
        stage_done=0,
        stage_total=len(pairs),
        stage_seconds=None,
    ):
        return "lost"
    result = score(evaluation, configs, pairs)
    if result is None:
        return "lost"
    result["faithfulness"] = faithful
    result["localisation_recommended"] = result["recommended"]
    result["recommended"] = choose(
        [group_of(config) for config in configs],
        result["groups"],
        result["baselines"]["random"],
        faithful,
        result["specificity"],
    ).as_dict()
    result["problems"] = problems[:MAX_PROBLEMS]
    return "done" if evaluations.finish(evaluation, nan_to_none(result)) else "lost"


def score(evaluation: RelevanceEvaluation, configs: Sequence[RelevanceConfig], pairs: Sequence[tuple]) -> dict | None:
    """ml.localisation's result for the stored maps of every configuration (see the module doc);
    None when this attempt lost the evaluation meanwhile (checked after every batch of pairs)."""
    profile = evaluation.profile
    scorer = Evaluation(peak_rule(profile.params), seed=evaluation.seed)
    missing = {config.key: 0 for config in configs}
    specific = {config.key: Summary() for config in configs}
    repeats = {config.key: {} for config in configs}  # {task id: {note id: [peak texts]}}
    without_gold = stale = scored = 0
    origins: dict = {}
    started = time.perf_counter()
    for batch in note_batches(list(pairs), SCORE_BATCH):
        gold = _gold(batch, origins)
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
            _specificity(arrays, texts, profile.params, specific[config.key], repeats[config.key])
        scored += len(batch)
        if not evaluations.report(
            evaluation,
            phase=f"scoring: {scored} of {len(pairs)} pairs",
            stage_done=scored,
            stage_seconds=time.perf_counter() - started,
        ):
            return None
    descriptions = dict(
        Task.objects.filter(pk__in={t for r in repeats.values() for t in r}).values_list("pk", "description")
    )
    return {
        **scorer.result(),
        "specificity": {
            key: {
                **specific[key].result(),
                "tasks": {descriptions.get(t, str(t)): task_repetition(by_note) for t, by_note in repeats[key].items()},
            }
            for key in specific
        },
        "configs": [{"key": config.key, **config.to_dict()} for config in configs],
        "profile": str(profile),
        "peak_params": profile.params.to_dict(),
        "n_pairs": len(pairs),
        "missing": missing,
        "pairs_without_gold": without_gold,
        "stale_maps": stale,
        "gold_origins": origins,
    }


def _specificity(arrays: dict, texts: dict, params, summary: Summary, repeats: dict) -> None:
    """Add a batch's notes (whole notes) to the specificity summary and the peak texts by task."""
    keys = sorted(pair for pair in arrays if pair[0] in texts)
    found = peaks_of_arrays([(None, n, t) for n, t in keys], [arrays[k] for k in keys], texts, params)
    by_note: dict[int, list] = {}
    for (note_id, task_id), result in zip(keys, found):
        if not result.fits:
            continue
        spans = [tuple(s) for s in result.char_spans]
        offsets, scores = arrays[(note_id, task_id)]
        by_note.setdefault(note_id, []).append(TaskMap(task_id, offsets, scores, spans))
        repeats.setdefault(task_id, {})[note_id] = [texts[note_id][a:b] for a, b in spans]
    for maps_of_note in by_note.values():
        summary.add(note_specificity(maps_of_note))


def faithfulness(evaluation, configs, pairs, model: Callable, problems: list) -> dict | str:
    """{config key: ml.faithfulness summary + verdict + forward passes} of the stored maps (see
    the module doc), or "cancelled" / "lost"."""
    fconfig = FaithfulnessConfig(seed=evaluation.seed)
    out: dict = {}
    passes, seconds = 0, 0.0
    scored = [config for config in configs if config.explain != "contrastive"]
    stage_total, stage_done, stage_seconds = len(pairs) * len(scored), 0, 0.0
    if not evaluations.report(
        evaluation,
        phase=f"faithfulness: 0 of {stage_total} pairs",
        stage=RelevanceEvaluation.Stage.FAITHFULNESS,
        stage_done=0,
        stage_total=stage_total,
        stage_seconds=None,
    ):
        return "lost"
    for index, config in enumerate(configs):
        if config.explain == "contrastive":
            out[config.key] = {"n_pairs": 0, "skipped": "faithfulness explains one prompt, not a contrast"}
            continue
        loaded = model()
        neutral = neutral_token_id(loaded.tokenizer, fconfig.neutral)
        records, config_passes, done = [], 0, 0
        for batch in note_batches(list(pairs), FAITH_BATCH):
            if evaluations.cancel_requested(evaluation):
                return "cancelled" if evaluations.cancelled(evaluation) else "lost"
            batch_started = time.perf_counter()
            arrays = maps.read(evaluation.model_version, config, batch)
            texts = dict(Note.objects.filter(pk__in={n for n, _ in batch}).values_list("pk", "text"))
            descriptions = dict(Task.objects.filter(pk__in={t for _, t in batch}).values_list("pk", "description"))
            inputs = []
            for pair in batch:
                note_id, task_id = pair
                if pair not in arrays or note_id not in texts or task_id not in descriptions:
                    continue
                offsets, scores = arrays[pair]
                try:
                    scorer = ModelScorer(
                        loaded,
                        texts[note_id],
                        descriptions[task_id],
                        config,
                        neutral_id=neutral,
                        quantity=fconfig.quantity,
                    )
                except ValueError as exc:
                    problems.append(f"Note {note_id} x task {task_id}: no faithfulness ({str(exc)[:120]}).")
                    continue
                if len(offsets) == 0 or not np.array_equal(scorer.enc.offsets, offsets):
                    problems.append(
                        f"Note {note_id} x task {task_id}: no faithfulness for {_config_label(config)} "
                        "(the stored map is not over this prompt's tokens: the note changed since)."
                    )
                    continue
                inputs.append(PairInput((str(note_id), str(task_id)), scorer, {config.method: np.asarray(scores)}))
            started = time.perf_counter()
            if inputs:
                result = faithfulness_evaluate(inputs, fconfig)
                records += result.pairs
                config_passes += result.forward_passes
                passes += result.forward_passes
            seconds += time.perf_counter() - started
            done += len(batch)
            stage_done += len(batch)
            stage_seconds += time.perf_counter() - batch_started
            if not evaluations.report(
                evaluation,
                seconds_per_pass=seconds / passes if passes else None,
                stage_done=stage_done,
                stage_seconds=stage_seconds,
                phase=f"faithfulness of {_config_label(config)} (configuration {index + 1} of {len(configs)}): "
                f"{done} of {len(pairs)} pairs",
            ):
                return "lost"
        summary = summarise(records, [config.method], fconfig)
        out[config.key] = {
            **summary,
            "verdict": verdicts(summary)[config.method] if records else None,
            "forward_passes": config_passes,
        }
    return out


def group_of(config: RelevanceConfig) -> dict:
    """A configuration's fields in ml.localisation's groups (and so in the recommendation)."""
    return {"method": config.method, "explain": config.explain, "template": config.template, "config_key": config.key}


def _config_label(config: RelevanceConfig) -> str:
    return label(group_of(config))


def _missing(evaluation, config, pairs) -> list[tuple[int, int]]:
    if config.method == IMPORTED:  # maps computed elsewhere are imported, never computed: missing ones stay missing
        return []
    out, it = [], iter(pairs)
    while batch := list(islice(it, SCORE_BATCH)):
        have = maps.stored(evaluation.model_version, config, batch)
        out += [pair for pair in batch if pair not in have]
    return out


def _check_process(configs, todo) -> None:
    import ml.lrp
    from ml.relevance import methods

    refused = [c for c in configs if todo[c.key] and methods.get(c.method).needs_unpatched]
    if ml.lrp.is_patched() and refused:
        raise EvaluationError(
            f"{methods.get(refused[0].method).label} needs a worker process that has not computed AttnLRP yet "
            "(lxt's patches stay in a process for good). Restart the relevance worker, then press Resume: the maps "
            "already stored are kept."
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


def _gold(batch, origins: dict | None = None) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """The union of each pair's gold evidence spans from every source (webapp.evaluation.gold_sources);
    the spans and pairs of each origin are counted into `origins`."""
    found = gold_sources.evidence(batch)
    if origins is not None:
        gold_sources.count_origins(found, origins)
    return {pair: sorted({(g.start, g.end) for g in items}) for pair, items in found.items()}
