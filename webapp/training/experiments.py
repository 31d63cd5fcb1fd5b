"""Experiment files: several runs described in one JSON file, run headless (docs/experiments/).

    {"name": "smoke",                                  # optional: prefix of the run names
     "model": "smollm2-135m-instruct",                 # default model version (name) of every run
     "split": {"corpus": "ward", "seed": 0, "test_ratio": 0.15, "tasks": []},   # labeled runs
     "defaults": {"train": {"max_steps": 20}},         # optional: section overrides for every run
                                                       # (applied to the kinds that have the section)
     "runs": [
       {"id": "dsm", "preset": "dsm-full", "dataset": {"name": "ward-dsm", "version": 1}},
       {"id": "dsm-ch", "preset": "ch", "model": "@dsm"},     # "@id": the model an earlier run produced
       {"id": "base-ch", "preset": "ch", "config": {"heads": {"epochs": 5}}}
     ]}

A run names a `preset` (see webapp.training.presets) or a `kind`; `dataset` is {"name", "version"}
(version omitted: the latest finished one) or a dataset id; `split` may be given per run too, with
the corpus's `project` (its slug) when a corpus of that name is in several projects.
Everything is checked before the first run starts; the runs are then executed in file order,
in this process (`run_sync`) or through the training queue (`run_enqueued`). A run whose input
model comes from a run that did not finish is skipped.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from webapp.corpus.access import CorpusNotFound, corpus_named
from webapp.datasets.models import DatasetVersion
from webapp.pipeline.models import JobStatus, ModelVersion
from webapp.training import configs, execution, presets, runs, splits
from webapp.training.models import CAUSAL_KINDS, RunKind, TrainingRun

TOP_KEYS = {"name", "description", "model", "split", "defaults", "runs"}
RUN_KEYS = {"id", "name", "preset", "kind", "model", "dataset", "split", "config"}
SPLIT_KEYS = {"corpus", "project", "seed", "test_ratio", "tasks"}  # project: its slug, when the name is in several


class ExperimentError(Exception):
    """The file cannot be run; the message lists every problem."""


@dataclass
class PlannedRun:
    key: str
    kind: str
    preset: str
    name: str
    model: str  # a model version name, or "@<run id>"
    dataset: DatasetVersion | None
    split: dict | None
    config: dict
    run: TrainingRun | None = None
    outcome: str = "pending"
    seconds: float | None = None

    @property
    def depends_on(self) -> str | None:
        return self.model[1:] if self.model.startswith("@") else None


@dataclass
class Experiment:
    name: str
    runs: list[PlannedRun] = field(default_factory=list)


def load(path) -> Experiment:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExperimentError(f"Cannot read {path}: {exc}") from None
    return parse(data)


def parse(data: dict) -> Experiment:
    problems: list[str] = []
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list) or not data["runs"]:
        raise ExperimentError('An experiment is an object with a non-empty list "runs".')
    _unknown(problems, "the experiment", data, TOP_KEYS)
    experiment = Experiment(name=str(data.get("name", "")))
    seen: set[str] = set()
    for index, spec in enumerate(data["runs"], 1):
        where = f"run {index}"
        if not isinstance(spec, dict):
            problems.append(f"{where}: must be an object.")
            continue
        planned = _plan(spec, data, where, seen, problems)
        if planned:
            experiment.runs.append(planned)
            seen.add(planned.key)
    if problems:
        raise ExperimentError("\n".join(problems))
    return experiment


def _plan(spec: dict, data: dict, where: str, seen: set[str], problems: list[str]) -> PlannedRun | None:
    key = str(spec.get("id") or "")
    where = f"run {key!r}" if key else where
    _unknown(problems, where, spec, RUN_KEYS)
    if not key:
        problems.append(f'{where}: give it an "id".')
    elif key in seen:
        problems.append(f"{where}: the id is used twice.")
    preset_key = spec.get("preset", "")
    try:
        preset = presets.get(preset_key) if preset_key else None
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return None
    kind = spec.get("kind") or (preset.kind if preset else "")
    if kind not in RunKind.values:
        problems.append(
            f'{where}: give a "preset" ({", ".join(presets.PRESETS)}) or a "kind" ({", ".join(RunKind.values)}).'
        )
        return None
    if preset and preset.kind != kind:
        problems.append(f"{where}: preset {preset.key!r} is a {preset.kind} run, not {kind}.")
    overrides, config_problems = run_settings(spec, data, kind, preset)
    problems.extend(f"{where}: {problem}" for problem in config_problems)
    model = str(spec.get("model") or data.get("model") or "")
    if not model:
        problems.append(f'{where}: name its "model" (a model version name, or "@<id>" of an earlier run).')
    elif model.startswith("@") and model[1:] not in seen:
        problems.append(f"{where}: {model} must name an earlier run of this file.")
    elif not model.startswith("@") and not ModelVersion.objects.filter(name=model).exists():
        problems.append(f"{where}: there is no model version {model!r}.")
    dataset, split = None, None
    if kind in CAUSAL_KINDS:
        dataset = _dataset(spec.get("dataset"), where, problems)
    else:
        split = spec.get("split") or data.get("split")
        _check_split(split, where, problems)
    name = spec.get("name") or "-".join(filter(None, [data.get("name", ""), key]))
    return PlannedRun(
        key=key,
        kind=kind,
        preset=preset.key if preset else "",
        name=str(name)[:200],
        model=model,
        dataset=dataset,
        split=split,
        config=overrides,
    )


def run_settings(spec: dict, data: dict, kind: str, preset=None) -> tuple[dict, list[str]]:
    """A run's section overrides, the preset's < the file's defaults (for the kinds that have the
    section) < the run's own config, and what is wrong with them (the launch form's validation)."""
    problems = []
    sections = configs.section_classes(kind)
    overrides = {name: dict(values) for name, values in (preset.overrides if preset else {}).items()}
    for name, values in (data.get("defaults") or {}).items():
        if name in sections and isinstance(values, dict):
            overrides.setdefault(name, {}).update(values)
    for name, values in (spec.get("config") or {}).items():
        if not isinstance(values, dict):
            problems.append(f"config section {name!r} must be an object.")
            continue
        overrides.setdefault(name, {}).update(values)
    _, config_problems = configs.build_config(kind, overrides)
    return overrides, problems + list(config_problems.values())


def _dataset(value, where, problems) -> DatasetVersion | None:
    if isinstance(value, int) and not isinstance(value, bool):
        found = DatasetVersion.objects.filter(pk=value).first()
    elif isinstance(value, dict) and value.get("name"):
        datasets = DatasetVersion.objects.filter(name=value["name"], status=JobStatus.DONE)
        if value.get("version") is not None:
            datasets = datasets.filter(version=value["version"])
        found = datasets.order_by("-version").first()
    else:
        problems.append(f'{where}: give its "dataset" as {{"name": ..., "version": ...}} or an id.')
        return None
    if found is None:
        problems.append(f"{where}: no finished dataset {value!r}.")
    return found


def _check_split(split, where, problems) -> None:
    if not isinstance(split, dict) or not split.get("corpus"):
        problems.append(f'{where}: give a "split" with at least a "corpus" (here or at the top).')
        return
    _unknown(problems, f"{where} split", split, SPLIT_KEYS)
    try:
        corpus_named(split["corpus"], split.get("project"))
    except CorpusNotFound as exc:
        problems.append(f"{where}: {exc}.")


def _unknown(problems, where, data, allowed) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        problems.append(f"{where}: unknown key(s) {', '.join(extra)}; allowed: {', '.join(sorted(allowed))}.")


# ------------------------------------------------------------------------ running


def launch_one(
    planned: PlannedRun, done: dict[str, PlannedRun], *, enqueue: bool, actor=None, confirm_identifiable: bool = False
) -> TrainingRun | None:
    """Create the run (None and outcome "skipped" when its input model was not produced). Its
    corpora pass the gate (webapp.deid.gate: gate.Refused) unless `confirm_identifiable`."""
    if planned.depends_on:
        source = done.get(planned.depends_on)
        model = source.run.produced_model if source and source.run and source.outcome == "done" else None
        if model is None:
            planned.outcome = "skipped"
            return None
    else:
        model = ModelVersion.objects.get(name=planned.model)
    split = None
    if planned.split:
        corpus = corpus_named(planned.split["corpus"], planned.split.get("project"))
        split, _ = splits.get_or_create_split(
            corpus,
            seed=planned.split.get("seed", 0),
            test_ratio=planned.split.get("test_ratio", 0.15),
            tasks=planned.split.get("tasks") or (),
            actor=actor,
        )
    spec = runs.RunSpec(
        kind=planned.kind,
        model_version=model,
        dataset=planned.dataset,
        split=split,
        config=planned.config,
        preset=planned.preset,
        name=planned.name,
    )
    planned.run = runs.launch(spec, actor=actor, enqueue=enqueue, confirm_identifiable=confirm_identifiable)
    return planned.run


def run_sync(
    experiment: Experiment, *, actor=None, on_event=None, confirm_identifiable: bool = False
) -> list[PlannedRun]:
    """Every run in this process, in file order (the worker's own code path, minus the queue)."""
    done: dict[str, PlannedRun] = {}
    for planned in experiment.runs:
        started = time.perf_counter()
        run = launch_one(planned, done, enqueue=False, actor=actor, confirm_identifiable=confirm_identifiable)
        if run is not None:
            claimed = runs.claim(run.pk, worker="run_experiment")
            planned.outcome = execution.execute(claimed) if claimed else "not claimed"
            planned.run = TrainingRun.objects.select_related("produced_model").get(pk=run.pk)
        planned.seconds = round(time.perf_counter() - started, 2)
        done[planned.key] = planned
        if on_event:
            on_event(planned)
    return experiment.runs


def run_enqueued(
    experiment: Experiment,
    *,
    actor=None,
    poll: float = 5.0,
    timeout: float | None = None,
    on_event=None,
    confirm_identifiable: bool = False,
) -> list[PlannedRun]:
    """Send each run to the training queue as soon as the run it depends on has finished; wait
    until every run has ended (or `timeout` seconds)."""
    started = time.monotonic()
    done: dict[str, PlannedRun] = {}
    waiting = list(experiment.runs)
    while waiting:
        for planned in list(waiting):
            dependency = done.get(planned.depends_on) if planned.depends_on else None
            if planned.run is None and (not planned.depends_on or dependency):
                launch_one(planned, done, enqueue=True, actor=actor, confirm_identifiable=confirm_identifiable)
                if planned.outcome == "skipped":
                    waiting.remove(planned)
                    done[planned.key] = planned
                    on_event and on_event(planned)
                continue
            if planned.run is not None:
                planned.run.refresh_from_db()
                if not planned.run.is_active:
                    planned.outcome = planned.run.status
                    waiting.remove(planned)
                    done[planned.key] = planned
                    on_event and on_event(planned)
        if waiting:
            if timeout is not None and time.monotonic() - started > timeout:
                raise ExperimentError(f"Timed out after {timeout:.0f} s; {len(waiting)} run(s) still going.")
            time.sleep(poll)
    return experiment.runs


def summary(planned_runs: list[PlannedRun]) -> list[dict]:
    rows = []
    for planned in planned_runs:
        run = planned.run
        row = {
            "id": planned.key,
            "run": run.pk if run else None,
            "kind": planned.kind,
            "preset": planned.preset,
            "status": planned.outcome,
            "seconds": planned.seconds,
        }
        if run is not None:
            results = run.results or {}
            row.update(
                macro_f1=results.get("macro_f1"),
                held_out=(results.get("held_out") or {}).get("macro_f1"),
                produced_model=run.produced_model.name if run.produced_model_id else None,
                error=run.error or None,
            )
        rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| run | id | kind | status | Macro F1 (95% CI) | held-out | seconds |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        macro, held = row.get("macro_f1"), row.get("held_out")
        lines.append(
            f"| {row['run'] or '-'} | {row['id']} | {row['preset'] or row['kind']} | {row['status']} | "
            f"{_ci(macro)} | {_ci(held)} | {row.get('seconds') or '-'} |"
        )
    return "\n".join(lines)


def _ci(value) -> str:
    if not value or value.get("estimate") is None:
        return "-"
    low, high = value.get("low"), value.get("high")
    bounds = f" ({100 * low:.1f}-{100 * high:.1f})" if low is not None and high is not None else ""
    return f"{100 * value['estimate']:.1f}{bounds}"
