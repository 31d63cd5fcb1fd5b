"""The loss and learning-rate curves of a run, as arrays for the run page's charts (uPlot), and
the run page's figures (step, epoch, loss, learning rate) read from the same rows, so the header
and the charts always show the same last point.

One series per phase (train; teacher / student for self-learning), x = the optimizer step. CH
trains one head per task, one after the other, and reports its epochs with a step counter that
runs on across heads: those rows are cut into one series per task (x = the head's epoch), so
the losses of different heads are never joined into one line that looks like a spike. Long runs
are thinned to at most MAX_POINTS points per series, always keeping the last one.
"""

from webapp.training.models import RunMetric, TrainingRun

MAX_POINTS = 4_000
HEADS = "heads"
KEYS = ("step", "epoch", "loss", "lr", "tokens_per_s")


def chart_data(run: TrainingRun, max_points: int = MAX_POINTS) -> dict:
    """{"x_label": ..., "phases": [{"phase": label, "step": [x...], "epoch", "loss", "lr", "tokens_per_s"}]}."""
    series = _series(run)
    heads_only = bool(series) and all(s["phase"].startswith(HEADS) for s in series)
    return {
        "x_label": "head epoch" if heads_only else "optimizer step",
        "phases": [{"phase": s["phase"], **_thin({k: s[k] for k in KEYS}, max_points)} for s in series],
    }


def latest(run: TrainingRun) -> dict | None:
    """The last point the charts draw, for the page's figures: {"series", "step", "epoch", "loss",
    "lr", "tokens_per_s"}; None before the first step. `step` is the run's step counter (for CH:
    head epochs done over all heads)."""
    row = (
        RunMetric.objects.filter(run=run)
        .order_by("-pk")
        .values("phase", "step", "epoch", "loss", "lr", "tokens_per_s")
        .first()
    )
    if row is None:
        return None
    label = row["phase"]
    if label == HEADS:
        label = next((s["phase"] for s in reversed(_series(run)) if row["step"] in s["steps"]), label)
    return {"series": label, **{k: row[k] for k in KEYS}}


def _series(run: TrainingRun) -> list[dict]:
    phases: dict[str, dict[str, list]] = {}
    rows = (
        RunMetric.objects.filter(run=run)
        .order_by("phase", "step")
        .values_list("phase", "step", "epoch", "loss", "lr", "tokens_per_s")
    )
    for phase, *values in rows.iterator(chunk_size=5_000):
        series = phases.setdefault(phase, {key: [] for key in KEYS})
        for key, value in zip(KEYS, values):
            series[key].append(value)
    out = []
    for phase, series in phases.items():
        if phase == HEADS:
            out.extend(_per_head(run, series))
        else:
            out.append({"phase": phase, "steps": series["step"], **series})
    return out


def _per_head(run: TrainingRun, series: dict[str, list]) -> list[dict]:
    """Cut the heads' rows where the epoch starts again at 1 (a new head), one series per task.
    Heads are trained in the order of their task slugs (ml.training.heads); the names are the
    split's tasks when the counts agree, else "head 1", "head 2"..."""
    cuts = (
        [0]
        + [
            i
            for i in range(1, len(series["step"]))
            if series["epoch"][i] is not None
            and series["epoch"][i - 1] is not None
            and series["epoch"][i] <= series["epoch"][i - 1]
        ]
        + [len(series["step"])]
    )
    parts = [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    tasks = sorted(run.split.tasks) if run.split_id and run.split.tasks else []
    names = tasks if len(tasks) == len(parts) else [f"head {n}" for n in range(1, len(parts) + 1)]
    out = []
    for name, (a, b) in zip(names, parts):
        part = {key: values[a:b] for key, values in series.items()}
        x = [int(e) if e is not None else s for e, s in zip(part["epoch"], part["step"])]
        out.append({"phase": f"{HEADS} · {name}", "steps": part["step"], **part, "step": x})
    return out


def _thin(series: dict[str, list], max_points: int) -> dict[str, list]:
    n = len(series["step"])
    if n <= max_points:
        return series
    every = -(-n // max_points)
    keep = list(range(0, n, every))
    if keep[-1] != n - 1:
        keep.append(n - 1)
    return {key: [values[i] for i in keep] for key, values in series.items()}
