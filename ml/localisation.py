"""Localisation evaluation: how well relevance maps find annotated evidence, against chance.

A PAIR is one note and one task description s_T with gold evidence (character spans of the
note), and the relevance map of one configuration (model x method x explain ...) for it: a
score per note token and the token offsets. A token is a GOLD TOKEN when its character span
overlaps a gold span (`ml.metrics.gold_token_mask`).

Per pair (`score_pairs`):
* `auc`: token-level ROC AUC of the scores against the gold tokens, ties as average ranks
  (Mann-Whitney U / (n_gold x n_other)); equal to scikit-learn's `roc_auc_score(gold, scores)`.
  0.5 = chance, 1.0 = every gold token above every other token. NaN when the pair has no gold
  token among its scored tokens (gold outside a truncated note) or only gold tokens.
* `mass_ratio`: `ml.metrics.relevance_mass_ratio`, the share of relevance on gold tokens over
  the share of tokens that are gold; 1.0 = uniform. NaN when undefined (no gold token, zero
  total relevance). Scores must be non-negative (the normalised |r| / max|r| maps are).
* peak token counts TP / FP / FN (`ml.metrics.peak_token_prf`) of the pair's PEAKS, given by a
  PEAK RULE: a function from [(scores, offsets, text), ...] to the peaks' token spans per item.
  `peak_rule(params)` is the product's rule (`ml.peaks.peaks_of_arrays`: runs above the
  thresholds, widened to words, trimmed; the web app passes its peak profile's PeakParams);
  any other function of that shape may be passed (tests do).

Per group of pairs (`summarise`, one configuration): `auc` and `mass_ratio` are MEANS over the
pairs where they are defined (`n_undefined` / `n_mass_ratio_undefined` count the others);
`peak_precision`, `peak_recall`, `peak_f1` are MICRO averages (TP/FP/FN summed over all
pairs, 0.0 when a denominator is 0, as `ml.metrics.PRF`). Each comes with a 95% percentile
bootstrap CI (`*_ci = [low, high]`) over pairs: `n_resamples` resamples of the pairs with
replacement, the SAME resamples for every statistic, drawn from `numpy.random.default_rng(seed)`.
The pairs are sorted by (note id, task) first, so groups holding the same pairs (the usual
case: every configuration scored on the same annotated pairs) get the same resamples, and their
CIs vary together. Vectorised: each block of resamples is a matrix of counts (how often each
pair is drawn) times the per-pair vectors, so the cost is a few matrix products per block (no Python loop per resample).
A resample where a mean is undefined (no defined pair drawn) is left out of that CI.

Baselines, computed the same way on the same pairs (the distinct (note, task) pairs of all
groups, each with the token offsets of the first group that had it):
* `uniform`: every score 1 (the normalised map of a constant relevance). AUC is 0.5 and the
  mass ratio 1.0 by construction (CI width 0). Its peaks go through the same peak rule: a
  constant map smoothed stays constant, so with `upper < 1` (or `upper = 1`, not strict) the
  whole note is one peak, minus the punctuation the trimming rule cuts off its two ends (peak
  recall 1, precision about the share of gold tokens); with a higher threshold there is no peak
  at all (P = R = F1 = 0).
* `random`: scores i.i.d. uniform on [0, 1), divided by their maximum (like a normalised map),
  drawn per pair from `default_rng([seed, crc32(note id, task)])` so a pair's random map does not
  depend on the order or the grouping of the pairs; peaks through the same peak rule. Its AUC
  and ratio are near 0.5 and 1.0, with a CI that shows how far chance alone moves them. (Under
  the paper's thresholds smoothed noise stays mostly above the lower one, so its peaks cover most
  of the note: peak recall near 1, precision near the share of gold tokens, like uniform.)

`recommend(groups, random)` picks the configuration to use. ELIGIBLE: a group with at least
`min_pairs` pairs of defined AUC (default 10: a bootstrap over fewer pairs says little) whose
AUC CI lower bound is above the random baseline's AUC CI upper bound (it beats chance even at
the pessimistic end of both intervals). Among the eligible, the highest AUC wins; AUCs equal to 3
decimals are tied, and the tie goes to the higher peak F1 (then the lower group label, for a
deterministic answer). With no eligible group the choice is None and the reason says why (the
best group's interval next to chance's). The chosen group's own fields (everything that is not a
statistic: its model, method, explain ...) are the recommendation.

Paired against the reference variant (`auc_vs_next`): marginal CIs of two configurations on the
same pairs overlap even when one is better on almost every pair, so each group that has a
REFERENCE group (same fields, explain "next": the reference code's variant, the product's default)
(fields compared without `config_key` and `neutral`, which differ between the two by definition)
also gets the mean per-pair AUC difference (group minus reference) over the pairs where both are
defined, with a paired bootstrap 95% CI and p-value (`ml.metrics.paired_mean_bootstrap`, same seed
and resamples count); None for the reference itself and for groups without one.

`Evaluation` puts it together for streams of pairs: `add(group, pairs)` scores a batch as it
comes (keeping a few numbers per pair, never the maps), `result()` returns
{"groups": [...], "baselines": {"uniform": ..., "random": ...}, "recommended": {"choice", "reason"},
 "bootstrap": {"n_resamples", "confidence", "seed"}}, groups sorted by their fields.

Pure: numpy and scipy, no Django.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from ml.metrics import gold_token_mask, paired_mean_bootstrap, peak_token_prf, relevance_mass_ratio

Span = tuple[int, int]
PeakItem = tuple[np.ndarray, np.ndarray, str]  # (scores, offsets, text)
PeakRule = Callable[[Sequence[PeakItem]], Sequence[Sequence[Span]]]

N_RESAMPLES = 1000
CONFIDENCE = 0.95
RESAMPLE_BLOCK_CELLS = 4_000_000  # pairs x resamples per block of the count matrix (~32 MB)
TIE_DECIMALS = 3  # AUCs equal to this many decimals are tied in `recommend`
MIN_PAIRS = 10  # pairs of defined AUC a configuration needs to be recommended
STAT_KEYS = frozenset(
    {
        "n_pairs",
        "n_undefined",
        "n_mass_ratio_undefined",
        "auc",
        "auc_ci",
        "mass_ratio",
        "mass_ratio_ci",
        "mass_ratio_median",
        "peak_precision",
        "peak_precision_ci",
        "peak_recall",
        "peak_recall_ci",
        "peak_f1",
        "peak_f1_ci",
        "peaks",
        "auc_vs_next",
    }
)
REFERENCE = {"explain": "next"}  # the variant the paired AUC differences are taken against
# fields that name a configuration rather than describe it: ignored when looking for the reference
# (its key differs from the variant's; its neutral text is unused)
IDENTITY_FIELDS = frozenset({"config_key", "neutral"})


@dataclass(frozen=True)
class Pair:
    """One note x task with gold evidence and the relevance map of one configuration."""

    note_id: str | int
    task: str | int
    text: str
    offsets: np.ndarray  # (n_tokens, 2) [start, end) of each scored token in `text`
    scores: np.ndarray  # (n_tokens,) non-negative relevance
    gold: Sequence[Span]  # gold evidence character spans

    @property
    def key(self) -> tuple[str, str]:
        return str(self.note_id), str(self.task)


@dataclass
class PairScores:
    """Per-pair statistics of many pairs, as parallel arrays (see the module docstring)."""

    keys: list[tuple[str, str]]
    auc: np.ndarray  # float64, NaN where undefined
    mass_ratio: np.ndarray  # float64, NaN where undefined
    tp: np.ndarray  # int64
    fp: np.ndarray
    fn: np.ndarray

    @classmethod
    def empty(cls) -> PairScores:
        return cls([], np.zeros(0), np.zeros(0), *(np.zeros(0, np.int64) for _ in range(3)))

    @classmethod
    def concat(cls, parts: Sequence[PairScores]) -> PairScores:
        if not parts:
            return cls.empty()
        return cls(
            [k for p in parts for k in p.keys],
            *(np.concatenate([getattr(p, name) for p in parts]) for name in ("auc", "mass_ratio", "tp", "fp", "fn")),
        )

    def __len__(self) -> int:
        return len(self.keys)

    def sorted(self) -> PairScores:
        order = sorted(range(len(self.keys)), key=self.keys.__getitem__)
        return PairScores(
            [self.keys[i] for i in order],
            self.auc[order],
            self.mass_ratio[order],
            self.tp[order],
            self.fp[order],
            self.fn[order],
        )


@dataclass(frozen=True)
class Recommendation:
    choice: dict | None  # the chosen group's own fields, or None when nothing beats chance
    reason: str  # plain words, for the page and the CLI

    def as_dict(self) -> dict:
        return {"choice": self.choice, "reason": self.reason}


# ---------------------------------------------------------------- one pair


def token_auc(scores, gold_mask) -> float:
    """ROC AUC of `scores` ranking the gold tokens above the others (ties: average ranks);
    NaN when there is no gold token or no other token. ValueError on NaN/infinite scores."""
    x = np.asarray(scores, dtype=np.float64)
    gold = np.asarray(gold_mask, dtype=bool)
    if x.shape != gold.shape or x.ndim != 1:
        raise ValueError(f"{x.size} scores for {gold.size} tokens")
    if not np.isfinite(x).all():
        raise ValueError("relevance scores contain NaN or infinity")
    n_pos = int(gold.sum())
    n_neg = gold.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = rankdata(x)  # average ranks for ties, 1-based
    u = float(ranks[gold].sum()) - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


def peak_rule(params=None) -> PeakRule:
    """The product's peak rule (`ml.peaks.peaks_of_arrays`, word spans) under `params`: an
    `ml.peaks.PeakParams`, a mapping of its fields, or None for the paper's."""
    from ml.peaks import PAPER, PeakParams, peaks_of_arrays

    if params is None:
        params = PAPER
    elif isinstance(params, Mapping):
        params = PeakParams.from_mapping(params)

    def rule(items: Sequence[PeakItem]) -> list[list[Span]]:
        keys = [(None, i, 0) for i in range(len(items))]
        texts = {i: text for i, (_, _, text) in enumerate(items)}
        arrays = [(np.asarray(offsets), scores) for scores, offsets, _ in items]
        return [list(p.word_spans) for p in peaks_of_arrays(keys, arrays, texts, params)]

    return rule


def score_pairs(pairs: Sequence[Pair], rule: PeakRule) -> PairScores:
    """AUC, mass ratio and peak TP/FP/FN of each pair; the peaks of all pairs in one rule call."""
    pairs = list(pairs)
    for p in pairs:
        if len(p.scores) != len(p.offsets):
            raise ValueError(f"note {p.note_id} x task {p.task}: {len(p.scores)} scores for {len(p.offsets)} tokens")
    peaks = rule([(np.asarray(p.scores), p.offsets, p.text) for p in pairs]) if pairs else []
    n = len(pairs)
    auc, ratio = np.empty(n), np.empty(n)
    counts = np.zeros((3, n), np.int64)
    for i, (p, spans) in enumerate(zip(pairs, peaks)):
        auc[i] = token_auc(p.scores, gold_token_mask(p.offsets, p.gold))
        ratio[i] = relevance_mass_ratio(p.scores, p.offsets, p.gold)
        prf = peak_token_prf(spans, p.offsets, p.gold)
        counts[:, i] = prf.tp, prf.fp, prf.fn
    return PairScores([p.key for p in pairs], auc, ratio, *counts)


# ---------------------------------------------------------------- baselines


def uniform_scores(n_tokens: int) -> np.ndarray:
    return np.ones(n_tokens)


def random_scores(n_tokens: int, key: tuple[str, str], seed: int = 0) -> np.ndarray:
    """I.i.d. uniform scores divided by their maximum, seeded by `seed` and the pair's key."""
    digest = zlib.crc32("\x1f".join(key).encode("utf-8"))
    values = np.random.default_rng([seed, digest]).random(n_tokens)
    top = values.max() if n_tokens else 0.0
    return values / top if top > 0 else values


def baseline_pairs(pairs: Iterable[Pair], kind: str, seed: int = 0) -> list[Pair]:
    """The pairs with their scores replaced by the `uniform` or `random` baseline's."""
    if kind == "uniform":
        return [_with_scores(p, uniform_scores(len(p.offsets))) for p in pairs]
    if kind == "random":
        return [_with_scores(p, random_scores(len(p.offsets), p.key, seed)) for p in pairs]
    raise ValueError(f"unknown baseline {kind!r}; choose uniform or random")


def _with_scores(p: Pair, scores: np.ndarray) -> Pair:
    return Pair(p.note_id, p.task, p.text, p.offsets, scores, p.gold)


# ---------------------------------------------------------------- a group


def summarise(
    scores: PairScores, *, n_resamples: int = N_RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
) -> dict:
    """Means, micro P/R/F1 and their percentile bootstrap CIs (see the module docstring)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    s = scores.sorted()
    n = len(s)
    auc_ok, ratio_ok = ~np.isnan(s.auc), ~np.isnan(s.mass_ratio)
    stats = _Stats(s)
    estimate = stats.of(np.ones((1, n)))
    if n == 0:
        draws = {name: np.zeros(0) for name in estimate}
    else:
        rng = np.random.default_rng(seed)
        block = max(1, RESAMPLE_BLOCK_CELLS // n)
        parts = []
        for start in range(0, n_resamples, block):
            b = min(block, n_resamples - start)
            index = rng.integers(0, n, size=(b, n))
            counts = np.bincount((index + n * np.arange(b)[:, None]).ravel(), minlength=b * n).reshape(b, n)
            parts.append(stats.of(counts))
        draws = {name: np.concatenate([p[name] for p in parts]) for name in estimate}
    alpha = (1 - confidence) / 2
    out = {"n_pairs": n, "n_undefined": int(n - auc_ok.sum()), "n_mass_ratio_undefined": int(n - ratio_ok.sum())}
    for name in ("auc", "mass_ratio", "peak_precision", "peak_recall", "peak_f1"):
        values = draws[name][~np.isnan(draws[name])]
        ci = np.quantile(values, [alpha, 1 - alpha]).tolist() if values.size else [math.nan, math.nan]
        out[name] = float(estimate[name][0])
        out[f"{name}_ci"] = [float(ci[0]), float(ci[1])]
        if name == "mass_ratio":
            out["mass_ratio_median"] = float(np.median(s.mass_ratio[ratio_ok])) if ratio_ok.any() else math.nan
    out["peaks"] = {"tp": int(s.tp.sum()), "fp": int(s.fp.sum()), "fn": int(s.fn.sum())}
    return out


class _Stats:
    """The statistics of a group for rows of pair weights (how often each pair is drawn)."""

    def __init__(self, s: PairScores):
        self.auc_ok = (~np.isnan(s.auc)).astype(np.float64)
        self.auc = np.nan_to_num(s.auc, nan=0.0)
        self.ratio_ok = (~np.isnan(s.mass_ratio)).astype(np.float64)
        self.ratio = np.nan_to_num(s.mass_ratio, nan=0.0)
        self.counts = np.stack([s.tp, s.fp, s.fn]).astype(np.float64)

    def of(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        w = weights.astype(np.float64, copy=False)
        tp, fp, fn = (w @ self.counts.T).T
        with np.errstate(invalid="ignore", divide="ignore"):
            auc = (w @ self.auc) / (w @ self.auc_ok)
            ratio = (w @ self.ratio) / (w @ self.ratio_ok)
            precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
            recall = np.where(tp + fn > 0, tp / (tp + fn), 0.0)
            f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
        return {"auc": auc, "mass_ratio": ratio, "peak_precision": precision, "peak_recall": recall, "peak_f1": f1}


# ---------------------------------------------------------------- the recommendation


def recommend(groups: Sequence[Mapping], random: Mapping, *, min_pairs: int = MIN_PAIRS) -> Recommendation:
    """The configuration to use (see the module docstring): among the groups with at least
    `min_pairs` pairs of defined AUC, the highest AUC whose CI lower bound is above the random
    baseline's AUC CI upper bound, ties broken by peak F1."""
    if not groups:
        return Recommendation(None, "There is nothing to compare: no configuration has scored pairs.")
    chance = random.get("auc_ci", [math.nan, math.nan])[1]
    if not _finite(chance):
        return Recommendation(
            None,
            "The random baseline has no AUC (no pair has both gold and other tokens), "
            "so no configuration can be shown to beat chance.",
        )
    scored = [g for g in groups if _finite(g.get("auc")) and _finite((g.get("auc_ci") or [math.nan])[0])]
    if not scored:
        return Recommendation(None, "No configuration has a defined AUC (no pair has both gold and other tokens).")
    scored = [g for g in scored if g["n_pairs"] - g["n_undefined"] >= min_pairs]
    if not scored:
        return Recommendation(
            None,
            f"Too few pairs to tell: a recommendation needs at least {min_pairs} annotated "
            "pairs with a defined AUC per configuration.",
        )
    eligible = [g for g in scored if g["auc_ci"][0] > chance]
    if not eligible:
        best = max(scored, key=lambda g: g["auc"])
        return Recommendation(
            None,
            (
                f"No configuration beats chance on these pairs: the best, {label(best)}, has AUC {best['auc']:.3f} "
                f"(95% CI {best['auc_ci'][0]:.3f}-{best['auc_ci'][1]:.3f}), and its lower bound is not above the "
                f"random baseline's upper bound {chance:.3f}."
            ),
        )
    best = min(eligible, key=lambda g: (-round(g["auc"], TIE_DECIMALS), -_or_zero(g.get("peak_f1")), label(g)))
    tied = [g for g in eligible if g is not best and round(g["auc"], TIE_DECIMALS) == round(best["auc"], TIE_DECIMALS)]
    reason = (
        f"{label(best)} localises the evidence best: AUC {best['auc']:.3f} (95% CI {best['auc_ci'][0]:.3f}-"
        f"{best['auc_ci'][1]:.3f}) against {chance:.3f} at the top of the random baseline's interval; "
        f"{len(eligible)} of {len(groups)} configurations beat chance."
    )
    if tied:
        reason += f" Tied on AUC with {', '.join(label(g) for g in tied)}; chosen for its higher peak F1."
    return Recommendation(fields_of(best), reason)


def fields_of(group: Mapping) -> dict:
    """A group's own fields: everything that is not a statistic."""
    return {k: v for k, v in group.items() if k not in STAT_KEYS}


def label(group: Mapping) -> str:
    """'model / method / explain' style name of a group, from its own fields."""
    fields = fields_of(group)
    return " / ".join(str(v) for k, v in fields.items() if v is not None and k != "config_key") or "the configuration"


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _or_zero(value) -> float:
    return value if _finite(value) else 0.0


# ---------------------------------------------------------------- streams of pairs


class Evaluation:
    """Score batches of pairs per group as they come; summarise everything at the end.

        evaluation = Evaluation(peak_rule(params), seed=0)
        evaluation.add({"method": "attnlrp", "explain": "next"}, pairs)   # any number of times
        evaluation.result()   # {"groups", "baselines", "recommended"}

    Memory: five numbers per pair and group, plus the same for the two baselines."""

    def __init__(
        self,
        rule: PeakRule,
        *,
        seed: int = 0,
        n_resamples: int = N_RESAMPLES,
        confidence: float = CONFIDENCE,
        min_pairs: int = MIN_PAIRS,
    ):
        self.rule, self.seed, self.n_resamples, self.confidence = rule, seed, n_resamples, confidence
        self.min_pairs = min_pairs
        self._groups: dict[tuple, tuple[dict, list[PairScores]]] = {}
        self._baselines: dict[str, list[PairScores]] = {"uniform": [], "random": []}
        self._seen: set[tuple[str, str]] = set()

    def add(self, group: Mapping, pairs: Sequence[Pair]) -> None:
        pairs = list(pairs)
        if not pairs:
            return
        key = tuple(group.items())
        self._groups.setdefault(key, (dict(group), []))[1].append(score_pairs(pairs, self.rule))
        fresh, keys = [], set()
        for p in pairs:
            if p.key not in self._seen and p.key not in keys:
                keys.add(p.key)
                fresh.append(p)
        self._seen |= keys
        if fresh:
            for kind, parts in self._baselines.items():
                parts.append(score_pairs(baseline_pairs(fresh, kind, self.seed), self.rule))

    def result(self) -> dict:
        options = {"n_resamples": self.n_resamples, "seed": self.seed, "confidence": self.confidence}
        ordered = sorted(self._groups.values(), key=lambda item: _sort_key(item[0]))
        scores = {tuple(fields.items()): PairScores.concat(parts) for fields, parts in ordered}
        groups = [
            {
                **fields,
                **summarise(scores[tuple(fields.items())], **options),
                "auc_vs_next": self._vs_reference(fields, scores),
            }
            for fields, _ in ordered
        ]
        baselines = {kind: summarise(PairScores.concat(parts), **options) for kind, parts in self._baselines.items()}
        return {
            "groups": groups,
            "baselines": baselines,
            "recommended": recommend(groups, baselines["random"], min_pairs=self.min_pairs).as_dict(),
            "bootstrap": {"n_resamples": self.n_resamples, "confidence": self.confidence, "seed": self.seed},
        }

    def _vs_reference(self, fields: dict, scores: dict) -> dict | None:
        """Paired AUC difference of a group against its reference group (see the module doc)."""
        if all(fields.get(k) == v for k, v in REFERENCE.items()) or not all(k in fields for k in REFERENCE):
            return None
        wanted = _described({**fields, **REFERENCE})
        reference = next((s for key, s in scores.items() if _described(dict(key)) == wanted), None)
        if reference is None:
            return None
        mine = dict(zip(scores[tuple(fields.items())].keys, scores[tuple(fields.items())].auc))
        theirs = dict(zip(reference.keys, reference.auc))
        common = sorted(set(mine) & set(theirs))
        diff = paired_mean_bootstrap(
            [theirs[k] for k in common],
            [mine[k] for k in common],
            n_resamples=self.n_resamples,
            seed=self.seed,
            confidence=self.confidence,
        )
        if not diff.n:
            return None
        return {"diff": diff.diff, "ci": [diff.low, diff.high], "p_value": diff.p_value, "n": diff.n}


def _described(fields: Mapping) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in fields.items() if k not in IDENTITY_FIELDS))


def _sort_key(fields: Mapping) -> tuple:
    return tuple("" if v is None else str(v) for v in fields.values())


def nan_to_none(value):
    """A result with NaN (undefined statistics) as None, for JSON: nested dicts and lists."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: nan_to_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [nan_to_none(v) for v in value]
    return value
