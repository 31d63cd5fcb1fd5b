"""The paper's comparison tables from evaluated runs, and the diff of two runs' configurations.

Each evaluated run is reduced to a `RunRow`: how the model was adapted (SFT, CH, 0-shot, 2-shot,
self-learning), where the model came from (`origin`: the base model, or the variant of the run
that trained it: dsm, cpt, random, one_peak, ...), the base model at the root of its lineage,
and its scores. The tables are plain functions of those rows (unit-tested against hand-computed
values); figures are F1 x 100, deltas are computed before rounding.

- Table 2: per base model, SFT and CH Macro F1 on the base model and on its DSM model, and the
  deltas (DSM - base).
- Table 3: held-out tasks: per task, F1 of each adaptation on the base and the DSM model, and the
  delta; the last row is the held-out Macro F1.
- Table 4: baselines and ablations: every system the paper lists, Macro F1 with the 95% CI.
- Paired differences: each Table 4 run against a reference run, item by item on the same test
  items (see `paired_rows`): Δ Macro F1 with a paired bootstrap 95% CI and p-value
  (ml.metrics.paired_bootstrap). Runs on different splits or item sets are not paired, and the
  table says so instead of giving a number.

Where several selected runs fill the same cell, the latest (highest id) is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.formats import number_format
from django.utils.translation import gettext, gettext_lazy, gettext_noop

from ml.metrics import PairedDiff, mean_task_f1, paired_bootstrap
from webapp.lib import csv_export
from webapp.training import configs
from webapp.training.models import RunKind, RunPrediction, TrainingRun

ADAPTATIONS = {RunKind.SFT: "SFT", RunKind.HEADS: "CH", RunKind.SELF_LEARNING: "self-learning SFT"}
# The labels below are English (the code and the tests key on them) and marked for translation: a
# table shows each in the reader's language (`_system_label`, `systems`).
ORIGIN_LABELS = {
    "base": gettext_noop("base"),
    "dsm": "DSM",
    "cpt": "CPT",
    "random": gettext_noop("random mask"),
    "one_peak": gettext_noop("one peak"),
    "unmasked": "CPT",
    "sft": gettext_noop("SFT model"),
    "self-learning": gettext_noop("self-learning model"),
}
ADAPTATION_LABELS = {"self-learning SFT": gettext_noop("self-learning SFT")}  # the others are names: SFT, CH, 2-shot
TABLE4_SYSTEMS = [  # (label, origin, adaptation): the paper's Table 4 order
    ("0-shot", "base", "0-shot"),
    ("2-shot", "base", "2-shot"),
    (gettext_noop("base + SFT"), "base", "SFT"),
    (gettext_noop("base + CH"), "base", "CH"),
    ("CPT + SFT", "cpt", "SFT"),
    ("CPT + CH", "cpt", "CH"),
    (gettext_noop("synthetic-label self-learning SFT"), "base", "self-learning SFT"),
    (gettext_noop("random mask + SFT"), "random", "SFT"),
    (gettext_noop("random mask + CH"), "random", "CH"),
    (gettext_noop("one peak + SFT"), "one_peak", "SFT"),
    (gettext_noop("one peak + CH"), "one_peak", "CH"),
    ("DSM + SFT", "dsm", "SFT"),
    ("DSM + CH", "dsm", "CH"),
]


# The tables' fixed column names in the reader's language, for the page and the CSV's header row (a
# table for people: the CSV opens in a spreadsheet); `Table.columns` keeps the English names the
# code keys on, and a column not listed (Table 3's "<model> SFT base") is shown as it is
HEADERS = {
    "Model": gettext_lazy("Model"),
    "System": gettext_lazy("System"),
    "Run": gettext_lazy("Run"),
    "Reference": gettext_lazy("Reference"),
    "Reference run": gettext_lazy("Reference run"),
    "Reference Macro F1": gettext_lazy("Reference Macro F1"),
    "Held-out task": gettext_lazy("Held-out task"),
    "95% CI low": gettext_lazy("95% CI low"),
    "95% CI high": gettext_lazy("95% CI high"),
    "Δ 95% CI low": gettext_lazy("Δ 95% CI low"),
    "Δ 95% CI high": gettext_lazy("Δ 95% CI high"),
    "Items": gettext_lazy("Items"),
    "Pairing": gettext_lazy("Pairing"),
}


@dataclass(frozen=True)
class RunRow:
    run_id: int
    adaptation: str  # "SFT", "CH", "0-shot", "2-shot", "self-learning SFT"
    origin: str  # "base", "dsm", "cpt", "random", "one_peak", ...
    base_model: str
    macro: dict | None = None  # {"estimate", "low", "high"} in [0, 1]
    per_task: dict = field(default_factory=dict)
    held_out_tasks: tuple = ()
    held_out_macro: dict | None = None
    split_id: int | None = None


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list]
    notes: list[str] = field(default_factory=list)
    formats: dict = field(default_factory=dict)  # column -> format of its figures in CSV (default: one decimal)

    @property
    def numeric(self) -> list[str]:
        """The columns holding figures (every column but the labels)."""
        return [c for c in self.columns if c not in ("Model", "System", "Held-out task")]

    @property
    def headers(self) -> list[tuple[str, bool]]:
        """(column name in the reader's language, holds figures) of each column, for the page."""
        numeric = self.numeric
        return [(str(HEADERS.get(c, c)), c in numeric) for c in self.columns]

    def to_csv(self) -> str:
        """The table as CSV, its header row in the reader's language (English outside a request)."""
        rows = (
            [_csv_cell(cell, self.formats.get(column)) for column, cell in zip(self.columns, row)] for row in self.rows
        )
        return csv_export.csv_text([header for header, _ in self.headers], rows)


# ------------------------------------------------------------------------ from the database


def origin_of(model_version) -> str:
    run = getattr(model_version, "produced_by_run", None) if model_version.parent_id else None
    if run is None:
        return "base"
    return variant_of(run)


def variant_of(run: TrainingRun) -> str:
    if run.kind == RunKind.DSM:
        return run.dataset.mode if run.dataset_id else "dsm"
    if run.kind == RunKind.SELF_LEARNING:
        return "self-learning"
    return run.kind


def root_of(model_version) -> str:
    seen = set()
    while model_version.parent_id and model_version.pk not in seen:
        seen.add(model_version.pk)
        model_version = model_version.parent
    return model_version.name


def adaptation_of(run: TrainingRun) -> str | None:
    if run.kind == RunKind.PROMPTING:
        return f"{run.config.get('prompting', {}).get('shots', 0)}-shot"
    return ADAPTATIONS.get(run.kind)


def row_of(run: TrainingRun) -> RunRow | None:
    """None for a run that has no evaluation (DSM/CPT training runs, unfinished runs)."""
    adaptation = adaptation_of(run)
    results = run.results or {}
    if adaptation is None or not results.get("macro_f1"):
        return None
    held = results.get("held_out") or {}
    return RunRow(
        run_id=run.pk,
        adaptation=adaptation,
        origin=origin_of(run.model_version),
        base_model=root_of(run.model_version),
        macro=results["macro_f1"],
        per_task=results.get("per_task") or {},
        held_out_tasks=tuple(held.get("tasks") or ()),
        held_out_macro=held.get("macro_f1"),
        split_id=run.split_id,
    )


def rows_of(runs) -> list[RunRow]:
    return [row for row in (row_of(run) for run in runs) if row is not None]


# ------------------------------------------------------------------------ the tables


def table2(rows: list[RunRow]) -> Table:
    cells = _latest(rows)
    columns = ["Model", "SFT base", "SFT DSM", "SFT Δ", "CH base", "CH DSM", "CH Δ"]
    out = []
    for base in _bases(rows):
        line = [base]
        for adaptation in ("SFT", "CH"):
            before, after = (_macro(cells.get((base, origin, adaptation))) for origin in ("base", "dsm"))
            line += [_points(before), _points(after), _delta(before, after)]
        out.append(line)
    return Table(
        gettext_lazy("Table 2: Macro F1, base vs DSM"),
        columns,
        out,
        [
            gettext(
                "F1 x 100; Δ = DSM - base, computed before rounding; empty: no such run selected. "
                "The paired differences below give each Δ's paired 95% CI and p-value."
            )
        ],
    )


def table3(rows: list[RunRow]) -> Table:
    cells = _latest(rows)
    groups = [
        (base, adaptation)
        for base in _bases(rows)
        for adaptation in ("SFT", "CH")
        if any((base, origin, adaptation) in cells for origin in ("base", "dsm"))
    ]
    tasks = sorted({task for row in rows for task in row.held_out_tasks})
    columns = ["Held-out task"] + [
        f"{base} {adaptation} {what}" for base, adaptation in groups for what in ("base", "DSM", "Δ")
    ]
    out = []
    for task in tasks + [None]:
        line = [task or gettext("Macro F1 (held-out tasks)")]
        for base, adaptation in groups:
            pair = [cells.get((base, origin, adaptation)) for origin in ("base", "dsm")]
            if task is None:
                before, after = (_estimate(row.held_out_macro) if row else None for row in pair)
            else:
                before, after = (row.per_task.get(task) if row else None for row in pair)
            line += [_points(before), _points(after), _delta(before, after)]
        out.append(line)
    return Table(
        gettext_lazy("Table 3: held-out tasks, F1"),
        columns,
        out if tasks else [],
        [gettext("F1 x 100 per held-out task (tasks never used for DSM training); Δ = DSM - base.")],
    )


def table4(rows: list[RunRow]) -> Table:
    columns = ["Model", "System", "Macro F1", "95% CI low", "95% CI high", "Run"]
    out = [_table4_line(row.base_model, label, row) for label, row in systems(rows)]
    return Table(
        gettext_lazy("Table 4: baselines and ablations, Macro F1"),
        columns,
        out,
        [gettext("F1 x 100 with the 95% bootstrap confidence interval.")],
    )


def systems(rows: list[RunRow]) -> list[tuple[str, RunRow]]:
    """(system label, row) in Table 4's order: per base model, the paper's systems, then the others."""
    cells = _latest(rows)
    out, used = [], set()
    for base in _bases(rows):
        for label, origin, adaptation in TABLE4_SYSTEMS:
            row = cells.get((base, origin, adaptation))
            if row:
                used.add((base, origin, adaptation))
                out.append((gettext(label), row))
        for key in sorted(k for k in cells if k[0] == base and k not in used):
            out.append((_origin_label(key[1], key[2]), cells[key]))
    return out


def _origin_label(origin: str, adaptation: str) -> str:
    """A system the paper does not list, named by its model's origin and its adaptation ("SFT model + CH")."""
    return f"{gettext(ORIGIN_LABELS.get(origin, origin))} + {gettext(ADAPTATION_LABELS.get(adaptation, adaptation))}"


def tables(rows: list[RunRow]) -> dict[str, Table]:
    return {"2": table2(rows), "3": table3(rows), "4": table4(rows)}


def _table4_line(base, label, row: RunRow) -> list:
    macro = row.macro or {}
    return [
        base,
        label,
        _points(macro.get("estimate")),
        _points(macro.get("low")),
        _points(macro.get("high")),
        row.run_id,
    ]


def _latest(rows: list[RunRow]) -> dict[tuple, RunRow]:
    cells: dict[tuple, RunRow] = {}
    for row in sorted(rows, key=lambda r: r.run_id):
        cells[(row.base_model, row.origin, row.adaptation)] = row
    return cells


def _bases(rows) -> list[str]:
    return sorted({row.base_model for row in rows})


def _estimate(ci):
    return ci.get("estimate") if ci else None


def _macro(row: RunRow | None):
    return _estimate(row.macro) if row else None


def _points(value):
    return None if value is None else round(100 * value, 1)


def _delta(before, after):
    return None if before is None or after is None else round(100 * (after - before), 1)


def _csv_cell(cell, spec=None):
    """A figure in its column's format; labels (model names, tasks) go to the writer as text."""
    return csv_export.figure(cell, spec or ".1f") if isinstance(cell, float) else cell


# ------------------------------------------------------------------------ paired differences

PAIRED_RESAMPLES = 1000
PAIRED_SEED = 0
#: Below this many items a bootstrap CI is too narrow and its p-value too small to report
#: (n items all better give p = 2 / (R + 1) whatever n): the difference alone is shown.
MIN_PAIRED_ITEMS = 10


@dataclass(frozen=True)
class ItemPredictions:
    """A run's stored test predictions on the tasks behind its Macro F1 (its held-out tasks left
    out), items in a fixed order: (note id, task slug) pairs, their gold labels and tasks, and one
    tuple of predicted labels per variant (prompting: one per prompt or example draw)."""

    split_id: int | None
    items: tuple = ()
    gold: tuple = ()
    tasks: tuple = ()
    variants: tuple = ()
    complete: bool = True  # every variant predicts every item


@dataclass(frozen=True)
class PairedRow:
    """One run against its reference: the paired difference, or why there is none."""

    label: str
    row: RunRow
    reference_label: str
    reference: RunRow
    result: PairedDiff | None = None
    reason: str = ""  # "" when paired

    @property
    def paired(self) -> bool:
        return self.result is not None

    @property
    def has_ci(self) -> bool:
        return self.result is not None and self.result.n >= MIN_PAIRED_ITEMS


def predictions_of(row: RunRow) -> ItemPredictions:
    """The run's RunPrediction rows, without the tasks its evaluation held out."""
    by_variant: dict[int, dict] = {}
    gold, tasks = {}, {}
    rows = (
        RunPrediction.objects.filter(run_id=row.run_id)
        .exclude(task__slug__in=list(row.held_out_tasks))
        .values_list("variant", "note_id", "task__slug", "gold", "predicted")
    )
    for variant, note_id, slug, gold_label, predicted in rows.iterator(chunk_size=5_000):
        key = (note_id, slug)
        by_variant.setdefault(variant, {})[key] = predicted
        gold[key], tasks[key] = gold_label, slug
    items = tuple(sorted(gold))
    complete = all(len(values) == len(items) for values in by_variant.values())
    variants = tuple(tuple(values.get(key, "") for key in items) for _, values in sorted(by_variant.items()))
    return ItemPredictions(
        row.split_id, items, tuple(gold[k] for k in items), tuple(tasks[k] for k in items), variants, complete
    )


def paired_difference(
    reference: ItemPredictions,
    other: ItemPredictions,
    *,
    reference_id=None,
    other_id=None,
    n_resamples: int = PAIRED_RESAMPLES,
    seed: int = PAIRED_SEED,
) -> tuple[PairedDiff | None, str]:
    """(Macro F1 of `other` minus that of `reference` with its paired bootstrap CI and p-value, "")
    when both were evaluated on the same split and the same test items with the same gold
    labels; else (None, why not)."""
    if reference.split_id is None or reference.split_id != other.split_id:
        return None, gettext("not paired: different splits (split %(reference)s vs split %(other)s)") % {
            "reference": _name(reference.split_id),
            "other": _name(other.split_id),
        }
    for run_id, predictions in ((reference_id, reference), (other_id, other)):
        if not predictions.items or not predictions.variants:
            return None, gettext("not paired: run %(run)s has no stored test predictions") % {"run": _name(run_id)}
        if not predictions.complete:
            return None, gettext("not paired: run %(run)s has predictions missing for some items") % {
                "run": _name(run_id)
            }
    if reference.items != other.items or reference.gold != other.gold:
        shared = len(set(reference.items) & set(other.items))
        return None, gettext("not paired: different test items (%(other)s vs %(reference)s, %(shared)s in common)") % {
            "other": _count(len(other.items)),
            "reference": _count(len(reference.items)),
            "shared": _count(shared),
        }
    result = paired_bootstrap(
        list(reference.gold),
        [list(v) for v in reference.variants],
        [list(v) for v in other.variants],
        mean_task_f1,
        n_resamples,
        seed,
        groups=list(reference.tasks),
        variants=True,
    )
    return result, ""


def reference_pairs(rows: list[RunRow], reference_id: int | None = None) -> list[tuple[str, RunRow, str, RunRow]]:
    """(label, row, reference label, reference row) for every Table 4 run but the reference.
    With `reference_id` (any evaluated row) every run is compared with that one. By default a
    run is compared with the run of the same adaptation on its base model (DSM + CH with
    base + CH), else with the first run of its base model in Table 4's order; a run that is
    that first run itself has no pair (runs of other base models are compared only on demand)."""
    ordered = systems(rows)
    labels = {row.run_id: label for label, row in ordered}
    chosen = next((row for row in rows if row.run_id == reference_id), None) if reference_id else None
    pairs = []
    for label, row in ordered:
        if chosen is not None:
            reference = chosen
        else:
            same_kind = [
                r
                for _, r in ordered
                if r.base_model == row.base_model and r.origin == "base" and r.adaptation == row.adaptation
            ]
            same_base = [r for _, r in ordered if r.base_model == row.base_model]
            reference = next((r for r in same_kind + same_base[:1] if r.run_id != row.run_id), None)
        if reference is not None and reference.run_id != row.run_id:
            reference_label = labels.get(reference.run_id) or _system_label(reference)
            pairs.append((label, row, reference_label, reference))
    return pairs


def paired_rows(
    rows: list[RunRow],
    reference_id: int | None = None,
    *,
    load=predictions_of,
    n_resamples: int = PAIRED_RESAMPLES,
    seed: int = PAIRED_SEED,
) -> list[PairedRow]:
    """The paired differences of `reference_pairs`; `load(row)` gives a run's ItemPredictions
    (read once per run)."""
    loaded: dict[int, ItemPredictions] = {}

    def of(row):
        if row.run_id not in loaded:
            loaded[row.run_id] = load(row)
        return loaded[row.run_id]

    out = []
    for label, row, reference_label, reference in reference_pairs(rows, reference_id):
        result, reason = paired_difference(
            of(reference),
            of(row),
            reference_id=reference.run_id,
            other_id=row.run_id,
            n_resamples=n_resamples,
            seed=seed,
        )
        out.append(PairedRow(label, row, reference_label, reference, result, reason))
    return out


def paired_table(paired: list[PairedRow]) -> Table:
    columns = [
        "Model",
        "System",
        "Run",
        "Reference",
        "Reference run",
        "Macro F1",
        "Reference Macro F1",
        "Δ Macro F1",
        "Δ 95% CI low",
        "Δ 95% CI high",
        "p",
        "Items",
        "Pairing",
    ]
    out = []
    for line in paired:
        result = line.result
        if result is None:
            figures, pairing = [None] * 5, line.reason
        elif line.has_ci:
            figures, pairing = (
                [_points(result.diff), _points(result.low), _points(result.high), result.p_value, result.n],
                gettext("paired"),
            )
        else:
            figures, pairing = (
                [_points(result.diff), None, None, None, result.n],
                gettext("paired; fewer than %(least)s items: no CI or p-value") % {"least": MIN_PAIRED_ITEMS},
            )
        out.append(
            [
                line.row.base_model,
                line.label,
                line.row.run_id,
                line.reference_label,
                line.reference.run_id,
                _points(_macro(line.row)),
                _points(_macro(line.reference)),
            ]
            + figures
            + [pairing]
        )
    return Table(
        gettext_lazy("Paired differences: Macro F1 against a reference run, item by item"),
        columns,
        out,
        [
            gettext(
                "Δ = run - reference, F1 x 100; 95%% CI: paired percentile bootstrap (%(resamples)s "
                "resamples of the test items, the same items drawn for both runs); p: two-sided bootstrap "
                "p-value of no difference, 2 x the share of resamples on the far side of 0 (with +1 "
                "correction), so p < 0.05 goes with a CI that excludes 0; none below "
                "%(least)s items. Only runs evaluated on the same split and the same test items are "
                "paired; held-out tasks are left out, as in Macro F1."
            )
            % {"resamples": PAIRED_RESAMPLES, "least": MIN_PAIRED_ITEMS}
        ],
        formats={"p": ".3f"},
    )


def _system_label(row: RunRow) -> str:
    label = next(
        (label for label, origin, adaptation in TABLE4_SYSTEMS if (origin, adaptation) == (row.origin, row.adaptation)),
        None,
    )
    return gettext(label) if label else _origin_label(row.origin, row.adaptation)


def _name(value) -> str:
    return "?" if value is None else str(value)


def _count(value: int) -> str:
    """A count with the reader's thousands separator (1,234 in English, 1.234 in Italian)."""
    return number_format(value, force_grouping=True)


# ------------------------------------------------------------------------ configuration diff


def describe(run: TrainingRun) -> dict[str, object]:
    """A run's whole setup as a flat dict: inputs, seed, code and library versions, config."""
    libraries = (run.provenance or {}).get("libraries", {})
    flat = {
        "kind": run.kind,
        "preset": run.preset,
        "model": run.model_version.name,
        "dataset": str(run.dataset) if run.dataset_id else None,
        "split": run.split_id,
        "seed": run.seed,
        "code_version": run.code_version or None,
    }
    flat.update({f"library.{name}": version for name, version in sorted(libraries.items())})
    flat.update(configs.flatten(run.config))
    return flat


def config_diff(a: TrainingRun, b: TrainingRun) -> list[tuple[str, object, object]]:
    return configs.diff(describe(a), describe(b))
