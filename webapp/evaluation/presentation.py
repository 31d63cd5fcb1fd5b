"""An evaluation's result as the result page shows it: table rows and interval charts.

The charts are server-rendered (CSS positions in percent, no JavaScript): one row per
configuration and baseline, a dot at the estimate and a whisker over its 95% CI, the random
baseline's CI as a shaded band behind every row (a configuration beats chance where its whole
whisker lies right of the band). Axes span the values shown, rounded out to tenths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ml.faithfulness import verdict_text
from ml.localisation import fields_of
from webapp.pipeline.models import RelevanceJob

STATS = ("auc", "mass_ratio", "peak_precision", "peak_recall", "peak_f1")


def label(group: dict) -> str:
    """A configuration's name as ml.localisation.label gives it ("attnlrp / span / en"), its method
    and explain variant by their labels in the reader's language ("AttnLRP / Every token of s_T,
    summed / en"); the prompt template and any other field as stored."""
    fields = fields_of(group)
    methods, explains = dict(RelevanceJob.Method.choices), dict(RelevanceJob.Explain.choices)
    names = {"method": methods, "explain": explains}
    parts = [str(names.get(k, {}).get(v, v)) for k, v in fields.items() if v is not None and k != "config_key"]
    return " / ".join(parts) or _("the configuration")


def stored_label(text: str) -> str:
    """A name ml.localisation.label wrote into a stored text ("attnlrp / span / en"), its method
    and explain codes by their labels; the other parts as stored."""
    if not isinstance(text, str) or not text:
        return text
    methods, explains = dict(RelevanceJob.Method.choices), dict(RelevanceJob.Explain.choices)
    if text == "the configuration":
        return _("the configuration")
    return " / ".join(str(methods.get(part, explains.get(part, part))) for part in text.split(" / "))


@dataclass(frozen=True)
class Row:
    label: str
    kind: str  # "config" or "baseline"
    stats: dict  # the group's statistics as stored (None where undefined)
    recommended: bool = False
    beats_chance: bool = False

    def value(self, name: str):
        return self.stats.get(name)

    def ci(self, name: str) -> list:
        return self.stats.get(f"{name}_ci") or [None, None]


def rows(result: dict) -> list[Row]:
    """Configurations (in result order), then the uniform and random baselines."""
    if not result.get("groups"):
        return []
    chance = (result["baselines"]["random"].get("auc_ci") or [None, None])[1]
    choice = (result.get("recommended") or {}).get("choice") or {}
    out = []
    for group in result["groups"]:
        low = (group.get("auc_ci") or [None, None])[0]
        out.append(
            Row(
                label(group),
                "config",
                group,
                recommended=bool(choice) and choice.get("config_key") == group.get("config_key"),
                beats_chance=low is not None and chance is not None and low > chance,
            )
        )
    baselines = {"uniform": _("uniform baseline"), "random": _("random baseline")}
    out += [Row(baselines[name], "baseline", result["baselines"][name]) for name in ("uniform", "random")]
    return out


def chart(result: dict, name: str, title: str, *, floor: float | None = None, ceiling: float | None = None) -> dict:
    """One interval chart of statistic `name` over every row; {} when nothing is defined."""
    table = rows(result)
    band = result["baselines"]["random"].get(f"{name}_ci") if table else None
    values = [v for row in table for v in (row.value(name), *row.ci(name)) if _defined(v)]
    values += [v for v in (band or []) if _defined(v)]
    if not values:
        return {}
    lo, hi = math.floor(min(values) * 10) / 10, math.ceil(max(values) * 10) / 10
    lo, hi = (lo if floor is None else max(lo, floor)), (hi if ceiling is None else min(hi, ceiling))
    if hi <= lo:
        hi = lo + 0.1

    def x(value) -> float:
        return round(100 * (min(max(value, lo), hi) - lo) / (hi - lo), 2)

    bars = []
    for row in table:
        value, (low, high) = row.value(name), row.ci(name)
        if not _defined(value):
            bars.append({"label": row.label, "kind": row.kind, "defined": False})
            continue
        low, high = (low if _defined(low) else value), (high if _defined(high) else value)
        bars.append(
            {
                "label": row.label,
                "kind": row.kind,
                "defined": True,
                "value": value,
                "low": low,
                "high": high,
                "point": x(value),
                "left": x(low),
                "width": max(round(x(high) - x(low), 2), 0.4),
                "recommended": row.recommended,
            }
        )
    step = 0.1 if hi - lo <= 1.0 else (0.5 if hi - lo <= 5 else math.ceil((hi - lo) / 5))
    ticks, k = [], math.ceil(lo / step - 1e-9)
    while k * step <= hi + 1e-9:  # at multiples of the step
        ticks.append({"value": round(k * step, 2), "left": x(k * step)})
        k += 1
    out = {"name": name, "title": title, "bars": bars, "ticks": ticks}
    if band and all(_defined(v) for v in band):
        out["band"] = {
            "left": x(band[0]),
            "width": max(round(x(band[1]) - x(band[0]), 2), 0.4),
            "low": band[0],
            "high": band[1],
        }
    return out


def charts(result: dict) -> list[dict]:
    specs = [
        ("auc", _("Token ROC AUC (0.5 = chance)"), 0.0, 1.0),
        ("mass_ratio", _("Relevance mass ratio on evidence (1.0 = uniform)"), 0.0, None),
        ("peak_f1", _("Peak token F1"), 0.0, 1.0),
    ]
    return [
        c
        for c in (chart(result, name, title, floor=floor, ceiling=ceiling) for name, title, floor, ceiling in specs)
        if c
    ]


def _defined(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


# ---------------------------------------------------------------- faithfulness and specificity


# ml.faithfulness's fixed words (ml has no Django: verdict_text, a configuration's skip) in the
# reader's language; a text not listed (a reason naming numbers) stays as ml wrote it
ML_WORDS = {
    "both": gettext_lazy("both"),
    "comprehensiveness": gettext_lazy("comprehensiveness"),
    "sufficiency": gettext_lazy("sufficiency"),
    "no": gettext_lazy("no"),
    "no verdict: the interval is undefined": gettext_lazy("no verdict: the interval is undefined"),
    "no verdict: measured before paired differences": gettext_lazy("no verdict: measured before paired differences"),
    "faithfulness explains one prompt, not a contrast": gettext_lazy(
        "faithfulness explains one prompt, not a contrast"
    ),
}


def ml_words(text):
    """`text` in the reader's language where it is one of ML_WORDS (each part of a "; "-joined list)."""
    if not isinstance(text, str) or not text:
        return text
    return "; ".join(str(ML_WORDS.get(part, part)) for part in text.split("; "))


def _config_label(config: dict) -> str:
    return label({k: config.get(k) for k in ("method", "explain", "template")})


def faithfulness_rows(result: dict) -> list[dict]:
    """One row per configuration measured (ml.faithfulness summary as stored), in result order:
    its AOPCs, the random rankings', the paired differences (method - random on the same pair;
    absent from results stored before them) and the verdict in words, with why there is none."""
    measured = result.get("faithfulness") or {}
    out = []
    for config in result.get("configs", []):
        summary = measured.get(config["key"])
        if summary is None:
            continue
        row = {
            "label": _config_label(config),
            "n_pairs": summary.get("n_pairs", 0),
            "skipped": ml_words(summary.get("skipped")),
        }
        block = (summary.get("methods") or {}).get(config["method"])
        if block:
            random = summary.get("random") or {}
            verdict = summary.get("verdict") or {}
            row.update(
                block=block,
                random=random,
                paired=block.get("paired") or {},
                verdict=verdict,
                says=ml_words(verdict_text(verdict)),
                draws=random.get("draws", 1),
                forward_passes=summary.get("forward_passes"),
                deletion=list(zip(summary.get("fractions", []), block.get("deletion", []))),
            )
        out.append(row)
    return out


def specificity_rows(result: dict) -> list[dict]:
    """One row per configuration: the ml.specificity summary and each task's repeated peaks."""
    measured = result.get("specificity") or {}
    return [
        {"label": _config_label(config), **measured[config["key"]]}
        for config in result.get("configs", [])
        if config["key"] in measured
    ]
