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

Where several selected runs fill the same cell, the latest (highest id) is used.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from webapp.training import configs
from webapp.training.models import RunKind, TrainingRun

ADAPTATIONS = {RunKind.SFT: "SFT", RunKind.HEADS: "CH", RunKind.SELF_LEARNING: "self-learning SFT"}
ORIGIN_LABELS = {"base": "base", "dsm": "DSM", "cpt": "CPT", "random": "random mask", "one_peak": "one peak",
                 "unmasked": "CPT", "sft": "SFT model", "self-learning": "self-learning model"}
TABLE4_SYSTEMS = [  # (label, origin, adaptation): the paper's Table 4 order
    ("0-shot", "base", "0-shot"), ("2-shot", "base", "2-shot"),
    ("base + SFT", "base", "SFT"), ("base + CH", "base", "CH"),
    ("CPT + SFT", "cpt", "SFT"), ("CPT + CH", "cpt", "CH"),
    ("synthetic-label self-learning SFT", "base", "self-learning SFT"),
    ("random mask + SFT", "random", "SFT"), ("random mask + CH", "random", "CH"),
    ("one peak + SFT", "one_peak", "SFT"), ("one peak + CH", "one_peak", "CH"),
    ("DSM + SFT", "dsm", "SFT"), ("DSM + CH", "dsm", "CH"),
]


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


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list]
    notes: list[str] = field(default_factory=list)

    @property
    def numeric(self) -> list[str]:
        """The columns holding figures (every column but the labels)."""
        return [c for c in self.columns if c not in ("Model", "System", "Held-out task")]

    def to_csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow([_csv_cell(cell) for cell in row])
        return buffer.getvalue()


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
    return RunRow(run_id=run.pk, adaptation=adaptation, origin=origin_of(run.model_version),
                  base_model=root_of(run.model_version), macro=results["macro_f1"],
                  per_task=results.get("per_task") or {}, held_out_tasks=tuple(held.get("tasks") or ()),
                  held_out_macro=held.get("macro_f1"))


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
    return Table("Table 2: Macro F1, base vs DSM", columns, out,
                 ["F1 x 100; Δ = DSM - base, computed before rounding; empty: no such run selected."])


def table3(rows: list[RunRow]) -> Table:
    cells = _latest(rows)
    groups = [(base, adaptation) for base in _bases(rows) for adaptation in ("SFT", "CH")
              if any((base, origin, adaptation) in cells for origin in ("base", "dsm"))]
    tasks = sorted({task for row in rows for task in row.held_out_tasks})
    columns = ["Held-out task"] + [f"{base} {adaptation} {what}" for base, adaptation in groups
                                   for what in ("base", "DSM", "Δ")]
    out = []
    for task in tasks + [None]:
        line = [task or "Macro F1 (held-out tasks)"]
        for base, adaptation in groups:
            pair = [cells.get((base, origin, adaptation)) for origin in ("base", "dsm")]
            if task is None:
                before, after = (_estimate(row.held_out_macro) if row else None for row in pair)
            else:
                before, after = (row.per_task.get(task) if row else None for row in pair)
            line += [_points(before), _points(after), _delta(before, after)]
        out.append(line)
    return Table("Table 3: held-out tasks, F1", columns, out if tasks else [],
                 ["F1 x 100 per held-out task (tasks never used for DSM training); Δ = DSM - base."])


def table4(rows: list[RunRow]) -> Table:
    cells = _latest(rows)
    columns = ["Model", "System", "Macro F1", "95% CI low", "95% CI high", "Run"]
    out, used = [], set()
    for base in _bases(rows):
        for label, origin, adaptation in TABLE4_SYSTEMS:
            row = cells.get((base, origin, adaptation))
            if row:
                used.add((base, origin, adaptation))
                out.append(_table4_line(base, label, row))
        for key in sorted(k for k in cells if k[0] == base and k not in used):
            out.append(_table4_line(base, f"{ORIGIN_LABELS.get(key[1], key[1])} + {key[2]}", cells[key]))
    return Table("Table 4: baselines and ablations, Macro F1", columns, out,
                 ["F1 x 100 with the 95% bootstrap confidence interval."])


def tables(rows: list[RunRow]) -> dict[str, Table]:
    return {"2": table2(rows), "3": table3(rows), "4": table4(rows)}


def _table4_line(base, label, row: RunRow) -> list:
    macro = row.macro or {}
    return [base, label, _points(macro.get("estimate")), _points(macro.get("low")), _points(macro.get("high")),
            row.run_id]


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


def _csv_cell(cell):
    if cell is None:
        return ""
    return f"{cell:.1f}" if isinstance(cell, float) else cell


# ------------------------------------------------------------------------ configuration diff


def describe(run: TrainingRun) -> dict[str, object]:
    """A run's whole setup as a flat dict: inputs, seed, code and library versions, config."""
    libraries = (run.provenance or {}).get("libraries", {})
    flat = {
        "kind": run.kind, "preset": run.preset, "model": run.model_version.name,
        "dataset": str(run.dataset) if run.dataset_id else None,
        "split": run.split_id, "seed": run.seed, "code_version": run.code_version or None,
    }
    flat.update({f"library.{name}": version for name, version in sorted(libraries.items())})
    flat.update(configs.flatten(run.config))
    return flat


def config_diff(a: TrainingRun, b: TrainingRun) -> list[tuple[str, object, object]]:
    return configs.diff(describe(a), describe(b))
