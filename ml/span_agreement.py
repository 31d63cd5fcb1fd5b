"""Agreement between annotators on SPANS (a label over a character range of a document):
pairwise F1 on exact and on overlapping matches, micro and per label, and Krippendorff's alpha
on tokens, each with a bootstrap CI over documents, the counts, and diagnostics in words.

The input is spans (doc, annotator, label, start, end), half-open character ranges, and which
annotators annotated which documents (an annotator who read a document and marked nothing counts
there with no span; one absent from a document is not compared on it). Only documents that two
or more annotators annotated carry agreement.

* F1, for a pair of annotators A and B on the documents both annotated, per label (a span matches
  only a span of the same label): exact, 2 |A ∩ B| / (|A| + |B|), the usual F1 of one against
  the other; overlapping, (h_A + h_B) / (|A| + |B|), h_A the spans of A that overlap a span of B
  (at least one character in common), h_B the same the other way: the share of both annotators'
  spans that the other one found too (equal to the harmonic mean of the two directions' precision
  when h_A = h_B; the exact F1 where every match is exact). Micro: the sums over every pair of
  annotators, every document and every label (or every pair and document of one label, in
  `per_label`), divided once. Undefined (NaN) with no span at all.
* `alpha_tokens`: Krippendorff's nominal alpha, an item being a token of a document that two or
  more annotators annotated and an annotator's value the label(s) of their spans covering it
  ("O" for none; labels of overlapping spans joined with "+"). Tokens are words and punctuation
  marks of the document's text (`\\w+|[^\\w\\s]`) where the text is given, else the characters
  up to the last span's end (said in the diagnostics). Equal to the `krippendorff` package's
  `alpha(..., level_of_measurement="nominal")` on the same tokens (tests check).
* `per_label[LABEL]["alpha_tokens"]`: the same alpha with two values only, the label or not
  ("O"; a token another label covers is "O" here), over the tokens of the paired documents
  annotated for that label (every paired document, unless `labels_of` says which labels a
  document was annotated for). Undefined (NaN) where no token has the label, or every token has it from every annotator.

Every figure is a ratio of sums over documents, so the bootstrap draws documents with
replacement (numpy Generator seeded by `seed`) and a block of resamples is one matrix product
of the draw counts with the per-document sums; resamples where a figure is undefined are
ignored. Memory: the per-document sums (documents x (labels + 1) x 3) and one block of weights.

The diagnostics are English sentences formatted from TEMPLATES (`%(name)s` placeholders; a label
and an annotator quoted as repr, counts as written): the web app shows them in its reader's
language by matching these templates (webapp.review.agreement_text lists them).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from itertools import combinations

import numpy as np

TOKEN = re.compile(r"\w+|[^\w\s]")
NONE = "O"  # an annotator's value on a token no span of theirs covers
RESAMPLE_BLOCK = 2_000_000  # weight cells (resamples x documents) per block of the bootstrap

# The diagnostics' words (module doc); change one here, change it in webapp.review.agreement_text.
NO_PAIRED = "No document was annotated by two or more annotators: agreement is undefined."
FEW_DOCUMENTS = (
    "Only %(documents)s documents were annotated by two or more annotators (fewer than %(least)s): the intervals "
    "are wide and one document can move a figure."
)
RARE_LABEL = (
    "Label %(label)s has %(spans)s span (fewer than %(least)s): too rare to measure; its F1 and alpha are hints, "
    "not figures to quote."
)
RARE_LABEL_MANY = (
    "Label %(label)s has %(spans)s spans (fewer than %(least)s): too rare to measure; its F1 and alpha are hints, "
    "not figures to quote."
)
LABEL_EVERYWHERE = (
    "Label %(label)s covers every token of the documents two or more annotators annotated for it, in every "
    "annotator's spans: no token says it apart, its alpha is undefined."
)
LABEL_NOWHERE = (
    "Label %(label)s covers no token of the documents two or more annotators annotated for it: its alpha is undefined."
)
NO_SPAN = (
    "Annotator %(annotator)s marked no span: every span of the others counts as missed by them; check that their "
    "file was complete before reading their pairs."
)
ALONE = "Annotator %(annotator)s shares no document with another annotator: not compared."
UNTEXTED = (
    "%(untexted)s of %(documents)s documents came without their text: alpha counts their characters up to the "
    "last span's end instead of tokens."
)
TEMPLATES = (
    NO_PAIRED,
    FEW_DOCUMENTS,
    RARE_LABEL,
    RARE_LABEL_MANY,
    LABEL_EVERYWHERE,
    LABEL_NOWHERE,
    NO_SPAN,
    ALONE,
    UNTEXTED,
)


@dataclass(frozen=True)
class Span:
    doc: Hashable
    annotator: str
    label: str
    start: int  # first character
    end: int  # one past the last


@dataclass(frozen=True)
class SpanSettings:
    n_resamples: int = 1000  # bootstrap resamples of the documents
    seed: int = 0  # seed of the bootstrap
    confidence: float = 0.95  # level of the percentile intervals
    min_documents: int = 30  # fewer documents seen by two: intervals are wide (warned)
    min_label_spans: int = 10  # a label with fewer spans than this is too rare to measure (warned)


@dataclass
class PairF1:
    first: str
    second: str
    documents: int  # documents both annotated
    spans: int  # |A| + |B| on those documents
    f1_exact: float
    f1_overlap: float


@dataclass
class LabelF1:
    spans: int
    f1_exact: float
    f1_exact_ci: tuple[float, float]
    f1_overlap: float
    f1_overlap_ci: tuple[float, float]
    alpha_tokens: float = math.nan  # nominal alpha on tokens, this label vs the rest ("O")
    alpha_tokens_ci: tuple[float, float] = (math.nan, math.nan)
    tokens: int = 0  # tokens of the paired documents annotated for this label (its alpha's items)


@dataclass
class SpanAgreement:
    f1_exact: float
    f1_exact_ci: tuple[float, float]
    f1_overlap: float
    f1_overlap_ci: tuple[float, float]
    alpha_tokens: float
    alpha_tokens_ci: tuple[float, float]
    documents: int  # documents with at least one annotator
    paired_documents: int  # documents two or more annotators annotated
    annotators: int
    spans: int
    tokens: int  # tokens of the paired documents (alpha's items)
    spans_per_annotator: dict[str, int] = field(default_factory=dict)
    spans_per_label: dict[str, int] = field(default_factory=dict)
    per_label: dict[str, LabelF1] = field(default_factory=dict)
    pairs: list[PairF1] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    token_unit: str = "token"  # "token", or "character" where no document had its text
    n_resamples: int = 0
    seed: int = 0
    confidence: float = 0.95

    def to_dict(self) -> dict:
        """Plain JSON-ready dict; NaN becomes None."""
        return _nan_to_none(asdict(self))


def span_agreement(
    spans: Iterable[Span],
    annotated: Mapping[Hashable, Iterable[str]] | None = None,
    texts: Mapping[Hashable, str] | None = None,
    settings: SpanSettings = SpanSettings(),
    labels_of: Mapping[Hashable, Iterable[str]] | None = None,
) -> SpanAgreement:
    """Every figure of the module docstring. `annotated`: doc -> the annotators who annotated it
    (added to those with a span there); `texts`: doc -> its text, for tokens; `labels_of`: doc ->
    the labels it was annotated for, the documents of each label's alpha (default: every label
    on every document)."""
    if not 0 < settings.confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {settings.confidence}")
    spans = list(spans)
    texts = texts or {}
    who: dict[Hashable, set[str]] = defaultdict(set)
    by_doc: dict[Hashable, list[Span]] = defaultdict(list)
    for doc, names in (annotated or {}).items():
        who[doc].update(names)
    for span in spans:
        if span.end <= span.start:
            raise ValueError(f"span {span.start}-{span.end} of document {span.doc!r} is empty or reversed")
        who[span.doc].add(span.annotator)
        by_doc[span.doc].append(span)
    annotators = sorted({a for names in who.values() for a in names})
    labels = sorted({s.label for s in spans})
    label_index = {label: k for k, label in enumerate(labels)}
    docs = list(who)
    paired = [d for d in docs if len(who[d]) >= 2]

    f1_parts = np.zeros((len(paired), len(labels) + 1, 3))  # per doc, label (last: all): 2E, hits, spans
    pair_parts: dict[tuple[str, str], np.ndarray] = defaultdict(lambda: np.zeros(4))  # docs, 2E, hits, spans
    alpha_docs: list[tuple[float, float, Counter]] = []  # per paired doc: n, D_o, n_k
    label_alpha = np.zeros((len(paired), len(labels), 4))  # per paired doc and label: n, D_o, n_label, n_O
    label_tokens = np.zeros(len(labels), dtype=int)
    untexted = tokens = 0
    for i, doc in enumerate(paired):
        mine = defaultdict(lambda: defaultdict(list))  # annotator -> label -> [(start, end)]
        for span in by_doc[doc]:
            mine[span.annotator][span.label].append((span.start, span.end))
        for a, b in combinations(sorted(who[doc]), 2):
            row = pair_parts[(a, b)]
            row[0] += 1
            for label in set(mine[a]) | set(mine[b]):
                two_e, hits, n = _pair_counts(mine[a][label], mine[b][label])
                f1_parts[i, label_index[label]] += (two_e, hits, n)
                row[1:] += (two_e, hits, n)
        if doc in texts:
            bounds = [m.span() for m in TOKEN.finditer(texts[doc])]
        else:
            untexted += 1
            last = max((s.end for s in by_doc[doc]), default=0)
            bounds = [(c, c + 1) for c in range(last)]
        tokens += len(bounds)
        n, do, nk = _alpha_parts(bounds, {a: mine[a] for a in who[doc]})
        alpha_docs.append((n, do, nk))
        in_scope = labels if labels_of is None else [x for x in labels_of.get(doc, ()) if x in label_index]
        for label in in_scope:  # a label nobody marked here: every value "O", no disagreement
            label_alpha[i, label_index[label]] = (n, 0.0, 0.0, n)
            label_tokens[label_index[label]] += len(bounds)
        if bounds:
            for label, parts in _label_alpha_parts(bounds, {a: mine[a] for a in who[doc]}).items():
                if label in in_scope:
                    label_alpha[i, label_index[label]] = parts
    f1_parts[:, -1] = f1_parts[:, :-1].sum(axis=1)

    values = sorted({v for _, _, nk in alpha_docs for v in nk})
    value_index = {v: k for k, v in enumerate(values)}
    alpha_n = np.array([n for n, _, _ in alpha_docs])
    alpha_do = np.array([do for _, do, _ in alpha_docs])
    alpha_nk = np.zeros((len(paired), len(values)))
    for i, (_, _, nk) in enumerate(alpha_docs):
        for v, c in nk.items():
            alpha_nk[i, value_index[v]] = c

    def figures(w: np.ndarray) -> dict[str, np.ndarray]:
        sums = np.tensordot(w, f1_parts, axes=(1, 0))  # resamples x (labels + 1) x 3
        with np.errstate(divide="ignore", invalid="ignore"):
            exact = sums[:, :, 0] / sums[:, :, 2]
            overlap = sums[:, :, 1] / sums[:, :, 2]
            n = w @ alpha_n
            alpha = 1 - (n - 1) * (w @ alpha_do) / (n**2 - ((w @ alpha_nk) ** 2).sum(axis=1))
            per = np.tensordot(w, label_alpha, axes=(1, 0))  # resamples x labels x 4
            n_l = per[:, :, 0]
            label = 1 - (n_l - 1) * per[:, :, 1] / (n_l**2 - per[:, :, 2] ** 2 - per[:, :, 3] ** 2)
        out = {"exact": exact, "overlap": overlap, "alpha": alpha, "label_alpha": label}
        return {k: np.where(np.isfinite(v), v, np.nan) for k, v in out.items()}

    point = figures(np.ones((1, len(paired))))
    cis = _bootstrap(figures, len(paired), settings)
    counts_by_label = Counter(s.label for s in spans)
    per_label = {
        label: LabelF1(
            counts_by_label[label],
            float(point["exact"][0, k]),
            cis["exact"][k],
            float(point["overlap"][0, k]),
            cis["overlap"][k],
            float(point["label_alpha"][0, k]),
            cis["label_alpha"][k],
            int(label_tokens[k]),
        )
        for label, k in label_index.items()
    }
    pairs = [
        PairF1(a, b, int(row[0]), int(row[3]), _ratio(row[1], row[3]), _ratio(row[2], row[3]))
        for (a, b), row in sorted(pair_parts.items())
    ]
    per_annotator = Counter(s.annotator for s in spans)
    result = SpanAgreement(
        f1_exact=float(point["exact"][0, -1]),
        f1_exact_ci=cis["exact"][-1],
        f1_overlap=float(point["overlap"][0, -1]),
        f1_overlap_ci=cis["overlap"][-1],
        alpha_tokens=float(point["alpha"][0]),
        alpha_tokens_ci=cis["alpha"][0],
        documents=len(docs),
        paired_documents=len(paired),
        annotators=len(annotators),
        spans=len(spans),
        tokens=tokens,
        spans_per_annotator={a: per_annotator.get(a, 0) for a in annotators},
        spans_per_label={label: counts_by_label[label] for label in labels},
        per_label=per_label,
        pairs=pairs,
        token_unit="character" if paired and untexted == len(paired) else "token",
        n_resamples=settings.n_resamples,
        seed=settings.seed,
        confidence=settings.confidence,
    )
    totals = label_alpha.sum(axis=0)  # labels x (n, D_o, n_label, n_O)
    everywhere = {label for label, k in label_index.items() if totals[k, 0] and totals[k, 3] == 0}
    result.diagnostics = diagnostics(result, settings, untexted, who, everywhere)
    return result


def _pair_counts(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> tuple[int, int, int]:
    """(2 x exact matches, spans of either that overlap one of the other, |A| + |B|) of one label."""
    exact = len(set(a) & set(b))
    hits = sum(_overlaps_any(s, b) for s in a) + sum(_overlaps_any(s, a) for s in b)
    return 2 * exact, hits, len(a) + len(b)


def _overlaps_any(span: tuple[int, int], others: list[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in others)


def _alpha_parts(bounds: list[tuple[int, int]], mine: dict) -> tuple[float, float, Counter]:
    """One document's terms of nominal alpha over its tokens: pairable values n, the observed
    disagreement sum_t (m^2 - sum_k n_tk^2) / (m - 1), and the value counts n_k."""
    if not bounds:
        return 0.0, 0.0, Counter()
    starts = np.array([s for s, _ in bounds])
    ends = np.array([e for _, e in bounds])
    m = len(mine)
    covered: list[list[set]] = []
    for labels in mine.values():
        cover = [set() for _ in bounds]
        for label, ranges in labels.items():
            for start, end in ranges:
                # tokens overlapping [start, end): ends > start and starts < end
                first = int(np.searchsorted(ends, start, side="right"))
                last = int(np.searchsorted(starts, end, side="left"))
                for t in range(first, last):
                    cover[t].add(label)
        covered.append(cover)
    codes = [["+".join(sorted(c)) if c else NONE for c in cover] for cover in covered]
    nk: Counter = Counter()
    do = 0.0
    for t in range(len(bounds)):
        counts = Counter(codes[a][t] for a in range(m))
        nk.update(counts)
        do += (m * m - sum(c * c for c in counts.values())) / (m - 1)
    return float(m * len(bounds)), do, nk


def _label_alpha_parts(bounds: list[tuple[int, int]], mine: dict) -> dict[str, tuple[float, float, float, float]]:
    """One document's terms of each marked label's two-valued alpha (the label or "O"): pairable
    values n, observed disagreement sum_t 2 c (m - c) / (m - 1) (c annotators giving the label),
    the label's count and "O"'s."""
    starts = np.array([s for s, _ in bounds])
    ends = np.array([e for _, e in bounds])
    m = len(mine)
    given: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(len(bounds)))  # label -> c per token
    for labels in mine.values():
        for label, ranges in labels.items():
            cover = np.zeros(len(bounds), dtype=bool)
            for start, end in ranges:
                cover[
                    int(np.searchsorted(ends, start, side="right")) : int(np.searchsorted(starts, end, side="left"))
                ] = True
            given[label] += cover
    n = float(m * len(bounds))
    return {
        label: (n, float((2 * c * (m - c)).sum() / (m - 1)), float(c.sum()), n - float(c.sum()))
        for label, c in given.items()
    }


def _bootstrap(figures, n_docs: int, settings: SpanSettings) -> dict[str, list[tuple[float, float]]]:
    width = {"exact": None, "overlap": None, "alpha": None, "label_alpha": None}
    if n_docs == 0 or settings.n_resamples < 1:
        probe = figures(np.ones((1, max(n_docs, 0))))
        return {k: [(math.nan, math.nan)] * probe[k].reshape(1, -1).shape[1] for k in width}
    rng = np.random.default_rng(settings.seed)
    block = max(1, RESAMPLE_BLOCK // n_docs)
    drawn_values: dict[str, list[np.ndarray]] = {k: [] for k in width}
    done = 0
    while done < settings.n_resamples:
        size = min(block, settings.n_resamples - done)
        drawn = rng.integers(0, n_docs, size=(size, n_docs)) + (np.arange(size) * n_docs)[:, None]
        w = np.bincount(drawn.ravel(), minlength=size * n_docs).reshape(size, n_docs).astype(float)
        for k, v in figures(w).items():
            drawn_values[k].append(v.reshape(size, -1))
        done += size
    tail = (1 - settings.confidence) / 2
    out = {}
    for k, chunks in drawn_values.items():
        v = np.concatenate(chunks)
        intervals = []
        for column in v.T:
            column = column[~np.isnan(column)]
            low, high = np.quantile(column, [tail, 1 - tail]) if column.size else (math.nan, math.nan)
            intervals.append((float(low), float(high)))
        out[k] = intervals
    return out


def diagnostics(
    result: SpanAgreement, settings: SpanSettings, untexted: int = 0, who=None, everywhere=frozenset()
) -> list[str]:
    """Plain sentences saying where a figure of `result` misleads. `everywhere`: the labels every
    annotator gave to every token their alpha counts (undefined too, for the opposite reason)."""
    out = []
    if result.paired_documents == 0:
        out.append(NO_PAIRED)
    elif result.paired_documents < settings.min_documents:
        out.append(FEW_DOCUMENTS % {"documents": result.paired_documents, "least": settings.min_documents})
    for label, n in result.spans_per_label.items():
        if n < settings.min_label_spans:
            template = RARE_LABEL if n == 1 else RARE_LABEL_MANY
            out.append(template % {"label": repr(label), "spans": n, "least": settings.min_label_spans})
        figures = result.per_label.get(label)
        if figures is not None and result.paired_documents and math.isnan(figures.alpha_tokens):
            out.append((LABEL_EVERYWHERE if label in everywhere else LABEL_NOWHERE) % {"label": repr(label)})
    for annotator, n in result.spans_per_annotator.items():
        if n == 0:
            out.append(NO_SPAN % {"annotator": repr(annotator)})
    if who is not None:
        shared = {a for names in who.values() if len(names) >= 2 for a in names}
        for annotator in result.spans_per_annotator:
            if annotator not in shared:
                out.append(ALONE % {"annotator": repr(annotator)})
    if untexted and result.paired_documents:
        out.append(UNTEXTED % {"untexted": untexted, "documents": result.paired_documents})
    return out


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den else math.nan


def _nan_to_none(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_nan_to_none(v) for v in value]
    return value
