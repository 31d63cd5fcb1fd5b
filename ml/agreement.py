"""Inter-reviewer agreement a study can report: Krippendorff's alpha, mean pairwise Cohen's
kappa, Gwet's AC1 and observed agreement, each with a 95% percentile bootstrap CI over items,
plus the diagnostics that say when a coefficient misleads.

The input is an ITEMS x REVIEWERS table of nominal labels, a missing judgement being None, ""
or NaN (`table_from_judgements` builds one from (item, reviewer, label) triples). An item with
at least two judgements is PAIRABLE; only pairable items carry agreement.

* `observed`: mean over pairable items of the share of agreeing reviewer pairs,
  sum_k n_ik (n_ik - 1) / (m_i (m_i - 1)), n_ik the judgements of label k on item i, m_i all
  judgements of item i.
* `alpha`: Krippendorff's nominal alpha, 1 - D_o / D_e from the coincidence matrix
  (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"); with n pairable values
  and n_k of label k: alpha = 1 - (n - 1) sum_i (m_i^2 - sum_k n_ik^2) / (m_i - 1) / (n^2 -
  sum_k n_k^2). Equal to the `krippendorff` package's `alpha(..., "nominal")` (tests check).
* `kappa`: Cohen's kappa of each reviewer pair on the items both judged, (p_o - p_e) /
  (1 - p_e), averaged over the pairs where it is defined (equal to scikit-learn's
  `cohen_kappa_score` per pair).
* `ac1`: Gwet's AC1 for any number of raters with missing ratings (Gwet 2008, "Computing
  inter-rater reliability and its variance in the presence of high agreement", eq. 18-19):
  (p_a - p_e) / (1 - p_e), p_a = `observed`, p_e = sum_k pi_k (1 - pi_k) / (q - 1), pi_k the
  mean over items with a judgement of n_ik / m_i, q the number of categories. On two raters
  who judged every item it is Gwet's two-rater formula (tests check).

Every coefficient is NaN where undefined (no pairable item; one category: alpha's and
kappa's chance agreement is 1). The bootstrap draws items with replacement (numpy Generator
seeded by `seed`) and ignores resamples where a coefficient is undefined. Each block of
resamples holds at most RESAMPLE_BLOCK weight cells, which bounds memory.
`reviewer_accuracy`: each reviewer against the consensus of the OTHER reviewers (the strict
majority label of the others on the item; items where the others tie are not counted), so a
reviewer never agrees with a consensus they made.

The diagnostics are English sentences formatted from TEMPLATES (`%(name)s` placeholders; a
reviewer's name and a label quoted as repr, counts and shares as written): the web app shows them
in its reader's language by matching these templates (webapp.review.agreement_text lists them).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations

import numpy as np
from scipy import sparse

#: Weight cells (resamples x items) drawn per block of the bootstrap (float64: 16 MB).
RESAMPLE_BLOCK = 2_000_000

# The diagnostics' words (module doc); change one here, change it in webapp.review.agreement_text.
NO_PAIRABLE = "No item was judged by two or more reviewers: agreement is undefined."
FEW_ITEMS = (
    "Only %(items)s items were judged by two or more reviewers (fewer than %(least)s): the intervals are wide "
    "and one item can move a coefficient."
)
ONE_LABEL = (
    "Every judgement is %(label)s: there is no variation to agree on, so %(undefined)s is undefined and only "
    "observed agreement means anything."
)
ONE_LABEL_MANY = (
    "Every judgement is %(label)s: there is no variation to agree on, so %(undefined)s are undefined and only "
    "observed agreement means anything."
)
NO_COEFFICIENT = "no coefficient"
AND = "%(first)s and %(last)s"
SKEWED = (
    "%(label)s is %(share)s of the judgements (above %(skew)s): kappa and alpha fall toward 0 on such skewed "
    "labels even when reviewers agree (the kappa paradox); read AC1 and observed agreement beside them."
)
FEW_JUDGEMENTS = (
    "Reviewer %(reviewer)s made %(judgements)s judgements (fewer than %(least)s): the kappas of their pairs rest "
    "on few items."
)
TEMPLATES = (NO_PAIRABLE, FEW_ITEMS, ONE_LABEL, ONE_LABEL_MANY, NO_COEFFICIENT, AND, SKEWED, FEW_JUDGEMENTS)


@dataclass(frozen=True)
class AgreementSettings:
    n_resamples: int = 1000  # bootstrap resamples of the items
    seed: int = 0  # seed of the bootstrap
    confidence: float = 0.95  # level of the percentile intervals
    min_items: int = 30  # fewer pairable items than this: intervals are wide (warned)
    skew: float = 0.8  # majority label's share above this: the kappa paradox (warned)
    min_judgements: int = 10  # a reviewer with fewer judgements than this is named (warned)


@dataclass
class PairKappa:
    first: str
    second: str
    items: int  # items both judged
    observed: float
    kappa: float


@dataclass
class ReviewerAccuracy:
    reviewer: str
    judgements: int
    compared: int  # items where the other reviewers have a strict majority label
    accuracy: float


@dataclass
class Agreement:
    alpha: float
    alpha_ci: tuple[float, float]
    kappa: float
    kappa_ci: tuple[float, float]
    ac1: float
    ac1_ci: tuple[float, float]
    observed: float
    observed_ci: tuple[float, float]
    items: int  # items with at least one judgement
    pairable_items: int  # items with at least two
    reviewers: int
    judgements: int
    labels: dict[str, int] = field(default_factory=dict)
    pairs: list[PairKappa] = field(default_factory=list)
    reviewer_accuracy: list[ReviewerAccuracy] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    n_resamples: int = 0
    seed: int = 0
    confidence: float = 0.95

    def to_dict(self) -> dict:
        """Plain JSON-ready dict; NaN becomes None."""
        return _nan_to_none(asdict(self))


def table_from_judgements(triples: Iterable[tuple[Hashable, Hashable, Hashable]]):
    """(item, reviewer, label) triples -> (item ids, reviewer ids, items x reviewers table),
    ids in first-seen order, None where a reviewer did not judge an item. A later triple for
    the same (item, reviewer) replaces an earlier one (callers that must refuse duplicates
    check before)."""
    items: dict = {}
    reviewers: dict = {}
    cells: dict = {}
    for item, reviewer, label in triples:
        i = items.setdefault(item, len(items))
        j = reviewers.setdefault(reviewer, len(reviewers))
        cells[(i, j)] = label
    table = [[None] * len(reviewers) for _ in items]
    for (i, j), label in cells.items():
        table[i][j] = label
    return list(items), list(reviewers), table


def agreement(
    table: Sequence[Sequence],
    reviewers: Sequence | None = None,
    *,
    categories: Sequence | None = None,
    settings: AgreementSettings = AgreementSettings(),
) -> Agreement:
    """Every coefficient, its bootstrap CI, the counts and the diagnostics of `table`
    (items x reviewers). `categories`: the label set (AC1's q); default the labels used."""
    codes, names, reviewer_names = _encode(table, reviewers, categories)
    q = len(names)
    parts = _Parts(codes, q)
    point = parts.coefficients(np.ones((1, codes.shape[0])))
    cis = _bootstrap(parts, settings)
    counts = np.bincount(codes[codes >= 0], minlength=q)
    result = Agreement(
        alpha=float(point["alpha"][0]),
        alpha_ci=cis["alpha"],
        kappa=float(point["kappa"][0]),
        kappa_ci=cis["kappa"],
        ac1=float(point["ac1"][0]),
        ac1_ci=cis["ac1"],
        observed=float(point["observed"][0]),
        observed_ci=cis["observed"],
        items=int((parts.m >= 1).sum()),
        pairable_items=int(parts.pairable.sum()),
        reviewers=len(reviewer_names),
        judgements=int((codes >= 0).sum()),
        labels={names[k]: int(counts[k]) for k in range(q)},
        pairs=_pair_kappas(codes, reviewer_names),
        reviewer_accuracy=_reviewer_accuracy(codes, parts.counts, reviewer_names),
        n_resamples=settings.n_resamples,
        seed=settings.seed,
        confidence=settings.confidence,
    )
    result.diagnostics = diagnostics(result, settings)
    return result


def diagnostics(result: Agreement, settings: AgreementSettings = AgreementSettings()) -> list[str]:
    """Plain sentences saying where a coefficient of `result` misleads."""
    out = []
    used = {label: n for label, n in result.labels.items() if n}
    if result.pairable_items == 0:
        out.append(NO_PAIRABLE)
    elif result.pairable_items < settings.min_items:
        out.append(FEW_ITEMS % {"items": result.pairable_items, "least": settings.min_items})
    if len(used) == 1:
        (label,) = used
        undefined = [name for name in ("alpha", "kappa", "AC1") if math.isnan(getattr(result, name.lower()))]
        template = ONE_LABEL if len(undefined) == 1 else ONE_LABEL_MANY
        out.append(template % {"label": repr(label), "undefined": _and(undefined) or NO_COEFFICIENT})
    elif result.judgements:
        label, n = max(used.items(), key=lambda kv: kv[1])
        share = n / result.judgements
        if share > settings.skew:
            out.append(SKEWED % {"label": repr(label), "share": f"{share:.0%}", "skew": f"{settings.skew:.0%}"})
    for acc in result.reviewer_accuracy:
        if acc.judgements < settings.min_judgements:
            out.append(
                FEW_JUDGEMENTS
                % {"reviewer": repr(acc.reviewer), "judgements": acc.judgements, "least": settings.min_judgements}
            )
    return out


def _and(words: list[str]) -> str:
    if len(words) < 2:
        return "".join(words)
    return AND % {"first": ", ".join(words[:-1]), "last": words[-1]}


class _Parts:
    """Per-item terms; every coefficient is a ratio of weighted sums of them, so a resample is
    a weight per item (how often it was drawn) and a block of resamples is one matrix product."""

    def __init__(self, codes: np.ndarray, q: int):
        n_items = codes.shape[0]
        self.q = q
        self.counts = np.zeros((n_items, q))
        rows, cols = np.nonzero(codes >= 0)
        np.add.at(self.counts, (rows, codes[rows, cols]), 1)
        self.m = self.counts.sum(axis=1)
        self.pairable = (self.m >= 2).astype(float)
        m1 = np.where(self.m >= 2, self.m - 1, 1)
        sq = (self.counts**2).sum(axis=1)
        self.do = np.where(self.m >= 2, (self.m**2 - sq) / m1, 0.0)
        self.n_pair = self.counts * self.pairable[:, None]
        self.agree = np.where(self.m >= 2, (sq - self.m) / (np.maximum(self.m, 1) * m1), 0.0)
        self.rated = (self.m >= 1).astype(float)
        self.share = self.counts / np.where(self.m >= 1, self.m, 1)[:, None]
        # the reviewer pairs' confusion cells: column p * q * q + a * q + b is 1 on the items
        # where the p-th pair (j, k) said (a, b); sparse, as most reviewers judge few items
        rows, cols = [], []
        pairs = list(combinations(range(codes.shape[1]), 2))
        for p, (j, k) in enumerate(pairs):
            both = np.nonzero((codes[:, j] >= 0) & (codes[:, k] >= 0))[0]
            rows.append(both)
            cols.append(p * q * q + codes[both, j] * q + codes[both, k])
        self.n_pairs = len(pairs)
        self.cells = sparse.csr_matrix(
            (np.ones(sum(r.size for r in rows)), (np.concatenate(rows or [[]]), np.concatenate(cols or [[]]))),
            shape=(n_items, max(1, self.n_pairs * q * q)),
        )

    def coefficients(self, w: np.ndarray) -> dict[str, np.ndarray]:
        """Each coefficient for each row of weights `w` (resamples x items)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            n = w @ (self.m * self.pairable)
            n_k = w @ self.n_pair
            alpha = 1 - (n - 1) * (w @ self.do) / (n**2 - (n_k**2).sum(axis=1))
            observed = (w @ self.agree) / (w @ self.pairable)
            pi = (w @ self.share) / (w @ self.rated)[:, None]
            pe = (pi * (1 - pi)).sum(axis=1) / (self.q - 1) if self.q > 1 else np.full(len(w), np.nan)
            ac1 = (observed - pe) / (1 - pe)
            if self.n_pairs:
                confusion = np.asarray((self.cells.T @ w.T).T).reshape(len(w) * self.n_pairs, self.q, self.q)
                kappa = _nanmean_rows(_kappa(confusion).reshape(len(w), self.n_pairs))
            else:
                kappa = np.full(len(w), np.nan)
        clean = {"alpha": alpha, "kappa": kappa, "ac1": ac1, "observed": observed}
        return {name: np.where(np.isfinite(v), v, np.nan) for name, v in clean.items()}


def cohen_kappa(a: Sequence, b: Sequence) -> float:
    """Cohen's kappa of two raters' labels of the same items, in order; NaN when undefined (no
    items, or one and the same label for everything)."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} labels from the first rater but {len(b)} from the second")
    if not a:
        return math.nan
    index = {label: i for i, label in enumerate(dict.fromkeys([*a, *b]))}
    confusion = np.zeros((1, len(index), len(index)))
    np.add.at(confusion[0], ([index[x] for x in a], [index[y] for y in b]), 1)
    return float(_kappa(confusion)[0])


def _kappa(confusion: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each confusion matrix in a (resamples, q, q) stack; NaN where undefined."""
    n = confusion.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return _kappa_of(confusion, n)


def _kappa_of(confusion: np.ndarray, n: np.ndarray) -> np.ndarray:
    po = np.trace(confusion, axis1=1, axis2=2) / n
    pe = (confusion.sum(axis=2) * confusion.sum(axis=1)).sum(axis=1) / n**2
    return np.where(np.isclose(pe, 1), np.nan, (po - pe) / (1 - pe))


def _nanmean_rows(values: np.ndarray) -> np.ndarray:
    defined = ~np.isnan(values)
    total = np.where(defined, values, 0).sum(axis=1)
    return np.where(defined.any(axis=1), total / np.maximum(defined.sum(axis=1), 1), np.nan)


def _bootstrap(parts: _Parts, settings: AgreementSettings) -> dict[str, tuple[float, float]]:
    if not 0 < settings.confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {settings.confidence}")
    names = ("alpha", "kappa", "ac1", "observed")
    n_items = parts.m.size
    if n_items == 0 or settings.n_resamples < 1:
        return {name: (math.nan, math.nan) for name in names}
    rng = np.random.default_rng(settings.seed)
    block = max(1, RESAMPLE_BLOCK // max(n_items, parts.n_pairs * parts.q**2))  # weights, pair cells
    values: dict[str, list] = {name: [] for name in names}
    done = 0
    while done < settings.n_resamples:
        size = min(block, settings.n_resamples - done)
        drawn = rng.integers(0, n_items, size=(size, n_items)) + (np.arange(size) * n_items)[:, None]
        w = np.bincount(drawn.ravel(), minlength=size * n_items).reshape(size, n_items).astype(float)
        for name, v in parts.coefficients(w).items():
            values[name].append(v)
        done += size
    tail = (1 - settings.confidence) / 2
    out = {}
    for name in names:
        v = np.concatenate(values[name])
        v = v[~np.isnan(v)]
        low, high = np.quantile(v, [tail, 1 - tail]) if v.size else (math.nan, math.nan)
        out[name] = (float(low), float(high))
    return out


def _pair_kappas(codes: np.ndarray, names: list[str]) -> list[PairKappa]:
    q = int(codes.max()) + 1 if (codes >= 0).any() else 1
    out = []
    for j, k in combinations(range(codes.shape[1]), 2):
        both = (codes[:, j] >= 0) & (codes[:, k] >= 0)
        if not both.any():
            continue
        a, b = codes[both, j], codes[both, k]
        confusion = np.zeros((1, q, q))
        np.add.at(confusion[0], (a, b), 1)
        out.append(PairKappa(names[j], names[k], int(both.sum()), float((a == b).mean()), float(_kappa(confusion)[0])))
    return out


def _reviewer_accuracy(codes: np.ndarray, counts: np.ndarray, names: list[str]) -> list[ReviewerAccuracy]:
    out = []
    for j, name in enumerate(names):
        mine = np.nonzero(codes[:, j] >= 0)[0]
        labels = codes[mine, j]
        others = counts[mine].copy()
        others[np.arange(mine.size), labels] -= 1  # the consensus of the OTHER reviewers
        top = others.max(axis=1, initial=0)
        strict = (top > 0) & ((others == top[:, None]).sum(axis=1) == 1)
        compared = int(strict.sum())
        hits = int((others.argmax(axis=1)[strict] == labels[strict]).sum()) if compared else 0
        out.append(ReviewerAccuracy(name, int(mine.size), compared, hits / compared if compared else math.nan))
    return out


def _encode(table, reviewers, categories):
    """Integer codes (items x reviewers, -1 missing), the label names, the reviewer names."""
    rows = [list(row) for row in table]
    width = len(reviewers) if reviewers is not None else max((len(r) for r in rows), default=0)
    if any(len(row) != width for row in rows):
        raise ValueError(f"every row of the table needs one cell per reviewer ({width})")
    used = {cell for row in rows for cell in row if not _missing(cell)}
    if categories is None:
        labels = sorted(used, key=lambda v: (str(type(v)), v))
    else:
        labels = list(categories)
        unknown = used - set(labels)
        if unknown:
            raise ValueError(f"labels not among the categories: {sorted(map(str, unknown))}")
    index = {label: k for k, label in enumerate(labels)}
    codes = np.array([[-1 if _missing(c) else index[c] for c in row] for row in rows], dtype=np.int64)
    codes = codes.reshape(len(rows), width)
    names = [str(r) for r in (reviewers if reviewers is not None else range(width))]
    return codes, [str(label) for label in labels], names


def _missing(cell) -> bool:
    return cell is None or cell == "" or (isinstance(cell, float) and math.isnan(cell))


def _nan_to_none(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_nan_to_none(v) for v in value]
    return value
