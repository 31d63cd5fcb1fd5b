"""The loss and learning-rate curves of a run, as arrays for the run page's charts (uPlot).

One series per phase (train; teacher / student for self-learning; heads for CH). Long runs are
thinned to at most MAX_POINTS points per phase, always keeping the last one.
"""
from webapp.training.models import RunMetric, TrainingRun

MAX_POINTS = 4_000


def chart_data(run: TrainingRun, max_points: int = MAX_POINTS) -> dict:
    phases: dict[str, dict[str, list]] = {}
    rows = (RunMetric.objects.filter(run=run).order_by("phase", "step")
            .values_list("phase", "step", "epoch", "loss", "lr", "tokens_per_s"))
    for phase, step, epoch, loss, lr, tokens in rows.iterator(chunk_size=5_000):
        series = phases.setdefault(phase, {"step": [], "epoch": [], "loss": [], "lr": [], "tokens_per_s": []})
        for key, value in (("step", step), ("epoch", epoch), ("loss", loss), ("lr", lr), ("tokens_per_s", tokens)):
            series[key].append(value)
    return {"phases": [{"phase": phase, **_thin(series, max_points)} for phase, series in phases.items()]}


def _thin(series: dict[str, list], max_points: int) -> dict[str, list]:
    n = len(series["step"])
    if n <= max_points:
        return series
    every = -(-n // max_points)
    keep = list(range(0, n, every))
    if keep[-1] != n - 1:
        keep.append(n - 1)
    return {key: [values[i] for i in keep] for key, values in series.items()}
