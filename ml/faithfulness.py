"""Faithfulness of relevance maps without gold: does hiding the top tokens change the prediction?

For each (note, task) pair and map, the note tokens are ranked by the map's scores (highest
first, ties by position) and, for each fraction f of FRACTIONS, the top k = round(f * n) note
tokens (at least 1, at most n) are replaced by a neutral token, positions and length kept:
* deletion(f)  = F(note without its top k),   comprehensiveness(f) = F(full) - deletion(f)
* insertion(f) = F(only its top k kept),      sufficiency(f)       = F(full) - insertion(f)
F is the explained quantity: the log-probability (`quantity="logprob"`, default) or the logit
of the token ml.relevance explains, on the prompt ml.relevance builds (`encode_pair`, same
template, truncation and explained positions): "next"/"max" the top token of the FULL prompt
(kept fixed under perturbation), "target" the middle token of s_T, "span" every s_T token
teacher-forced, summed. ("contrastive" explains a difference of two prompts: not supported.)
AOPC = the mean over FRACTIONS. A faithful map has HIGH comprehensiveness (removing what it
ranks first hurts) and LOW sufficiency (what it ranks first alone keeps the prediction); the
deletion curve falls and the insertion curve rises faster than a random ranking's.

Random baseline within the budget: each pair adds ONE random row, a stratified draw of one
(kind, fraction) cell among 2 x len(FRACTIONS) (seeded permutation of the pairs, so every cell
gets an equal share): the top k of a random ranking (ml.localisation.random_scores, seeded by
`seed` and the pair) removed, or only those kept. The random curves are the cell means over
pairs and the random AOPCs their means over fractions: unbiased, but from n / 10 pairs per
cell, so their CIs are wider than the maps'. Maps of several methods on the same pairs share
the full row and the random row.

Cost in forward passes (one pass = one prompt row through the model, no backward): per pair
1 (full) + 2 x len(FRACTIONS) per method + 1 (random) = 12 with the default 5 fractions and
one method, beyond the map itself; a pair's rows have the same length and run as one batch
(one forward call; chunks of `max_rows` rows). `FaithfulnessResult.forward_passes` counts them.

Summary: means over pairs with 95% percentile bootstrap CIs over pairs (the resamples of
ml.metrics.bootstrap_ci, `resample_indices`). No gold is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ml.localisation import random_scores
from ml.metrics import resample_indices

FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5)  # <= 5 keeps a pair at 12 forward passes (module doc)
PASSES_PER_PAIR = 1 + 2 * len(FRACTIONS) + 1  # one method: full row, deletions, insertions, random row
NEUTRAL = ("pad", "space")
QUANTITIES = ("logprob", "logit")
KINDS = ("comprehensiveness", "sufficiency")


@dataclass(frozen=True)
class FaithfulnessConfig:
    fractions: tuple[float, ...] = FRACTIONS  # shares of the note's tokens hidden or kept
    neutral: str = "pad"  # replacement: the tokenizer's pad token (else eos, unk); "space": the " " token
    quantity: str = "logprob"  # F: log-probability of the explained token(s); "logit": the raw logit
    seed: int = 0  # random ranking, random cells and bootstrap
    n_resamples: int = 1000  # bootstrap resamples over pairs
    confidence: float = 0.95  # CI level

    def __post_init__(self):
        fractions = tuple(float(f) for f in self.fractions)
        if not fractions or any(not 0 < f <= 1 for f in fractions) or len(set(fractions)) != len(fractions):
            raise ValueError("fractions must be distinct numbers in (0, 1]")
        object.__setattr__(self, "fractions", fractions)
        if self.neutral not in NEUTRAL:
            raise ValueError(f"neutral must be one of {', '.join(NEUTRAL)}")
        if self.quantity not in QUANTITIES:
            raise ValueError(f"quantity must be one of {', '.join(QUANTITIES)}")
        if self.n_resamples < 1 or not 0 < self.confidence < 1:
            raise ValueError("n_resamples must be >= 1 and confidence in (0, 1)")


#: scorer(replace) -> F of each row; replace: bool (rows, n_tokens), True = token replaced.
Scorer = Callable[[np.ndarray], np.ndarray]


@dataclass
class PairInput:
    key: tuple[str, str]  # (note id, task): seeds the pair's random ranking
    scorer: Scorer
    maps: Mapping[str, np.ndarray]  # method -> scores over the note tokens (higher = more relevant)


@dataclass
class FaithfulnessResult:
    pairs: list[dict]
    summary: dict
    forward_passes: int
    forward_calls: int

    def as_dict(self) -> dict:
        n = len(self.pairs)
        return {
            "summary": self.summary,
            "forward_passes": self.forward_passes,
            "forward_passes_per_pair": self.forward_passes / n if n else 0.0,
            "forward_calls": self.forward_calls,
            "pairs": self.pairs,
        }


def n_kept(n_tokens: int, fraction: float) -> int:
    """Tokens in the top `fraction` of n: round half up, at least 1, at most n."""
    return min(n_tokens, max(1, int(fraction * n_tokens + 0.5)))


def ranking(scores: np.ndarray) -> np.ndarray:
    """Token indices by decreasing score; equal scores keep their order (stable)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")


def random_cells(n_pairs: int, n_fractions: int, seed: int) -> list[tuple[int, int]]:
    """(kind index, fraction index) of each pair's random row: a seeded permutation of the
    pairs dealt round the 2 x n_fractions cells."""
    cells = [(kind, f) for kind in range(len(KINDS)) for f in range(n_fractions)]
    order = np.random.default_rng([seed, 7]).permutation(n_pairs)
    return [cells[int(i) % len(cells)] for i in order]


def evaluate(
    pairs: Sequence[PairInput],
    config: FaithfulnessConfig | None = None,
    *,
    cells: Sequence[tuple[int, int]] | None = None,
) -> FaithfulnessResult:
    """Per-pair deletion/insertion values of every map and the random row, then the summary.
    `cells`: each pair's random cell, when the pairs are one batch of a larger sample (the
    caller deals `random_cells` over the whole sample and `summarise`s every batch's records)."""
    config = config or FaithfulnessConfig()
    fractions = config.fractions
    methods = list(pairs[0].maps) if pairs else []
    if cells is None:
        cells = random_cells(len(pairs), len(fractions), config.seed)
    elif len(cells) != len(pairs):
        raise ValueError("cells must give one random cell per pair")
    rows_out, passes, calls = [], 0, 0
    for pair, (kind, fi) in zip(pairs, cells):
        if list(pair.maps) != methods:
            raise ValueError("every pair needs maps of the same methods, in the same order")
        n = len(next(iter(pair.maps.values())))
        if n == 0 or any(len(m) != n for m in pair.maps.values()):
            raise ValueError(f"pair {pair.key}: maps must cover the same, non-empty note tokens")
        replace = [np.zeros(n, dtype=bool)]  # row 0: the full note
        for method in methods:
            order = ranking(pair.maps[method])
            for keep_top in (False, True):  # deletion rows, then insertion rows
                for f in fractions:
                    row = np.zeros(n, dtype=bool)
                    row[order[: n_kept(n, f)]] = True
                    replace.append(~row if keep_top else row)
        order = ranking(random_scores(n, pair.key, config.seed))
        row = np.zeros(n, dtype=bool)
        row[order[: n_kept(n, fractions[fi])]] = True
        replace.append(~row if kind == 1 else row)
        values = np.asarray(pair.scorer(np.stack(replace)), dtype=np.float64)
        passes += len(replace)
        calls += getattr(pair.scorer, "calls", 1)
        full, m = float(values[0]), len(fractions)
        record = {"note_id": pair.key[0], "task": pair.key[1], "n_tokens": n, "full": full, "methods": {}}
        for j, method in enumerate(methods):
            deletion = values[1 + 2 * m * j : 1 + 2 * m * j + m]
            insertion = values[1 + 2 * m * j + m : 1 + 2 * m * (j + 1)]
            record["methods"][method] = {
                "deletion": deletion.tolist(),
                "insertion": insertion.tolist(),
                "comprehensiveness": (full - deletion).tolist(),
                "sufficiency": (full - insertion).tolist(),
                "aopc_comprehensiveness": float(np.mean(full - deletion)),
                "aopc_sufficiency": float(np.mean(full - insertion)),
            }
        record["random"] = {"kind": KINDS[kind], "fraction": fractions[fi], "value": float(full - values[-1])}
        rows_out.append(record)
    summary = summarise(rows_out, methods, config)
    return FaithfulnessResult(rows_out, summary, passes, calls)


# ---------------------------------------------------------------- summary


def summarise(records: Sequence[dict], methods: Sequence[str], config: FaithfulnessConfig) -> dict:
    """Means over pairs with percentile bootstrap CIs; the random baseline from its cells."""
    n, fractions = len(records), list(config.fractions)
    out: dict = {"n_pairs": n, "fractions": fractions, "config": asdict(config), "methods": {}}
    if n == 0:
        return out
    draws = list(resample_indices(n, config.n_resamples, config.seed))
    counts = np.concatenate([np.apply_along_axis(np.bincount, 1, d, minlength=n) for d in draws]).astype(np.float64)
    alpha = (1 - config.confidence) / 2

    def with_ci(name: str, estimate: np.ndarray, resampled: np.ndarray, into: dict) -> None:
        """estimate (q,), resampled (R, q): resamples with an undefined value are ignored."""
        low, high = [], []
        for column in resampled.T:
            column = column[np.isfinite(column)]
            ci = np.quantile(column, [alpha, 1 - alpha]) if column.size else (np.nan, np.nan)
            low.append(float(ci[0]))
            high.append(float(ci[1]))
        scalar = estimate.shape == (1,)
        into[name] = float(estimate[0]) if scalar else estimate.tolist()
        into[f"{name}_ci"] = [low[0], high[0]] if scalar else [list(p) for p in zip(low, high)]

    full = np.array([r["full"] for r in records])
    for method in methods:
        per = [r["methods"][method] for r in records]
        block = {}
        for name in ("aopc_comprehensiveness", "aopc_sufficiency"):
            v = np.array([[p[name]] for p in per])
            with_ci(name, v.mean(0), counts @ v / n, block)
        for name in ("comprehensiveness", "sufficiency", "deletion", "insertion"):
            v = np.array([p[name] for p in per])
            with_ci(name, v.mean(0), counts @ v / n, block)
        out["methods"][method] = block
    v = full[:, None]
    with_ci("full", v.mean(0), counts @ v / n, out)

    # Random baseline: cell means (pairs drawn into the cell), AOPC = mean over fractions.
    value = np.array([r["random"]["value"] for r in records])
    cell = np.zeros((n, 2 * len(fractions)))
    for i, r in enumerate(records):
        cell[i, KINDS.index(r["random"]["kind"]) * len(fractions) + fractions.index(r["random"]["fraction"])] = 1

    def cell_means(weights: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return (weights @ (cell * value[:, None])) / (weights @ cell)

    estimate, resampled = cell_means(np.ones((1, n))), cell_means(counts)
    random: dict = {"pairs_per_cell": cell.sum(0).astype(int).reshape(2, -1).tolist()}
    for k, kind in enumerate(KINDS):
        part = slice(k * len(fractions), (k + 1) * len(fractions))
        with_ci(kind, estimate[0, part], resampled[:, part], random)
        with_ci(f"aopc_{kind}", estimate[:, part].mean(1), resampled[:, part].mean(1)[:, None], random)
    out["random"] = random
    return out


def verdicts(summary: Mapping) -> dict[str, dict]:
    """Per method, whether its AOPCs beat the random ranking's: comprehensiveness beats it when
    the method's 95% CI lies wholly above the random baseline's, sufficiency when it lies wholly
    below (lower is better); `faithful` needs both. Undefined intervals (too few pairs in a
    random cell) beat nothing."""
    random = summary.get("random") or {}
    out = {}
    for method, block in (summary.get("methods") or {}).items():
        comp = _ci_apart(block.get("aopc_comprehensiveness_ci"), random.get("aopc_comprehensiveness_ci"), above=True)
        suff = _ci_apart(block.get("aopc_sufficiency_ci"), random.get("aopc_sufficiency_ci"), above=False)
        out[method] = {
            "comprehensiveness_beats_random": comp,
            "sufficiency_beats_random": suff,
            "faithful": comp and suff,
        }
    return out


def _ci_apart(ours, theirs, *, above: bool) -> bool:
    values = [*(ours or []), *(theirs or [])]
    if len(values) != 4 or not all(isinstance(v, (int, float)) and np.isfinite(v) for v in values):
        return False
    return ours[0] > theirs[1] if above else ours[1] < theirs[0]


def markdown(summary: Mapping) -> str:
    """The summary as a markdown table: one row per method, then the random ranking."""

    def cell(block, name):
        value, (low, high) = block.get(name), block.get(f"{name}_ci") or (None, None)
        return f"{_fmt(value)} ({_fmt(low)}-{_fmt(high)})"

    fractions = summary.get("fractions") or []
    head = ["ranking", "AOPC comprehensiveness (95% CI)", "AOPC sufficiency (95% CI)"]
    head += [f"deletion at {f:g}" for f in fractions] + ["beats random"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    verdict = verdicts(summary)
    for method, block in (summary.get("methods") or {}).items():
        v = verdict[method]
        says = (
            "both"
            if v["faithful"]
            else "comprehensiveness"
            if v["comprehensiveness_beats_random"]
            else ("sufficiency" if v["sufficiency_beats_random"] else "no")
        )
        cells = [method, cell(block, "aopc_comprehensiveness"), cell(block, "aopc_sufficiency")]
        lines.append("| " + " | ".join([*cells, *(_fmt(d) for d in block.get("deletion", [])), says]) + " |")
    random = summary.get("random") or {}
    if random:
        cells = ["random (baseline)", cell(random, "aopc_comprehensiveness"), cell(random, "aopc_sufficiency")]
        lines.append("| " + " | ".join([*cells, *([""] * len(fractions)), ""]) + " |")
    full = summary.get("full")
    lines += ["", f"{summary.get('n_pairs', 0)} pairs; F(full prompt) mean {_fmt(full)}."]
    return "\n".join(lines)


def _fmt(value) -> str:
    return "n/a" if not isinstance(value, (int, float)) or not np.isfinite(value) else f"{value:.3f}"


# ---------------------------------------------------------------- a language model's scorer


def neutral_token_id(tokenizer, how: str = "pad") -> int:
    """The replacement token: "pad" -> pad, else eos, else unk; "space" -> the single token of " "."""
    if how == "space":
        ids = tokenizer(" ", add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise ValueError('this tokenizer has no single-token " "; use neutral="pad"')
        return int(ids[0])
    for token_id in (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id):
        if token_id is not None:
            return int(token_id)
    raise ValueError("this tokenizer has no pad, eos or unk token; use neutral='space'")


class ModelScorer:
    """F of a (note, task) prompt with note tokens replaced, for a causal LM (module doc).

    The prompt and the note tokens are exactly ml.relevance's (`encode_pair` with the
    configuration's template, truncation and explained positions), so a map's i-th score is
    the i-th note token here. Rows of one call run as one batch (chunks of `max_rows`) of
    equal length: no padding. For "next"/"max" the first row must be the full prompt: its top
    token is the one explained in every row.
    """

    def __init__(
        self,
        loaded,
        note: str,
        task: str,
        relevance_config,
        *,
        neutral_id: int,
        quantity="logprob",
        max_rows=32,
        chat=None,
    ):
        from ml.prompts import get_template
        from ml.relevance import context_limit, encode_pair

        explain = relevance_config.explain
        if explain == "contrastive":
            raise ValueError("faithfulness explains one prompt: explain='contrastive' is not supported")
        limit = relevance_config.max_note_tokens
        self.enc = encode_pair(
            loaded.tokenizer,
            note,
            task,
            template=get_template(relevance_config.template),
            chat=chat,
            chat_template_kwargs=loaded.family.chat_template_kwargs,
            max_note_tokens=limit if limit is not None else context_limit(loaded.model),
            truncate=relevance_config.truncate,
            include_target=explain == "next",
            whole_task=explain == "span",
        )
        self.model, self.explain, self.quantity = loaded.model, explain, quantity
        self.neutral_id, self.max_rows = neutral_id, max_rows
        self.explained: list[int] | None = (
            self.enc.task_ids if explain == "span" else [self.enc.target_id] if explain == "target" else None
        )
        self._top: int | None = None
        self.calls = 0

    @property
    def n_tokens(self) -> int:
        return len(self.enc.note_index)

    def __call__(self, replace: np.ndarray) -> np.ndarray:
        import torch

        replace = np.asarray(replace, dtype=bool)
        if replace.ndim != 2 or replace.shape[1] != self.n_tokens:
            raise ValueError(f"replace must be (rows, {self.n_tokens})")
        if self.explained is None and self._top is None and replace[0].any():
            raise ValueError("the first row must be the full prompt (it fixes the explained token)")
        base = torch.tensor(self.enc.input_ids, dtype=torch.long)
        out = []
        for start in range(0, len(replace), self.max_rows):
            chunk = replace[start : start + self.max_rows]
            ids = base.repeat(len(chunk), 1)
            rows, cols = np.nonzero(chunk)
            ids[torch.as_tensor(rows), torch.as_tensor(self.enc.note_index[cols])] = self.neutral_id
            out.append(self.forward(ids))
            self.calls += 1
        return np.concatenate(out)

    def forward(self, ids) -> np.ndarray:
        """F of each row of ids (rows, L); for "next"/"max" the first row of the first call
        fixes the explained token (its top logit)."""
        import torch

        keep = len(self.explained) if self.explained else 1
        with torch.no_grad():
            logits = self.model(input_ids=ids.to(self.model.device), use_cache=False, logits_to_keep=keep).logits
        logits = logits[:, -keep:, :].float()
        values = torch.log_softmax(logits, dim=-1) if self.quantity == "logprob" else logits
        if self.explained is None:
            if self._top is None:
                self._top = int(logits[0, -1].argmax())
            explained = [self._top]
        else:
            explained = self.explained
        target = torch.tensor([explained], device=logits.device).expand(len(values), -1)
        return values.gather(2, target[..., None])[..., 0].sum(1).cpu().double().numpy()


def model_pairs(
    loaded,
    notes: Sequence[str],
    tasks: Sequence[str],
    keys: Sequence[tuple[str, str]],
    maps: Mapping[str, Sequence],
    relevance_config,
    config: FaithfulnessConfig | None = None,
    *,
    max_rows: int = 32,
) -> list[PairInput]:
    """PairInputs of a language model: maps[method][i] is pair i's RelevanceResult (or its
    scores); a result's offsets must be the note tokens of the scorer's prompt."""
    config = config or FaithfulnessConfig()
    neutral_id = neutral_token_id(loaded.tokenizer, config.neutral)
    out = []
    for i, (note, task, key) in enumerate(zip(notes, tasks, keys)):
        scorer = ModelScorer(
            loaded, note, task, relevance_config, neutral_id=neutral_id, quantity=config.quantity, max_rows=max_rows
        )
        scores = {}
        for method, results in maps.items():
            r = results[i]
            if hasattr(r, "offsets") and not np.array_equal(r.offsets, scorer.enc.offsets):
                raise ValueError(f"pair {key}: the {method} map is not over this prompt's note tokens")
            scores[method] = np.asarray(getattr(r, "scores", r), dtype=np.float64)
        out.append(PairInput(key, scorer, scores))
    return out


def faithfulness(
    loaded,
    notes: Sequence[str],
    tasks: Sequence[str],
    keys: Sequence[tuple[str, str]],
    methods: Sequence[str],
    relevance_config,
    config: FaithfulnessConfig | None = None,
    *,
    batch_size: int | None = None,
    max_rows: int = 32,
) -> FaithfulnessResult:
    """Maps of each method (ml.relevance.compute_relevance with `relevance_config`, its method
    replaced; in ml.relevance.methods.run_order, since AttnLRP patches this process), then
    `evaluate` on the model."""
    from dataclasses import replace

    from ml.relevance import compute_relevance
    from ml.relevance.methods import run_order

    ordered = run_order(methods)
    maps = {
        m: compute_relevance(
            loaded, list(notes), list(tasks), replace(relevance_config, method=m), batch_size=batch_size
        )
        for m in ordered
    }
    maps = {m: maps[m] for m in dict.fromkeys(methods)}
    pairs = model_pairs(loaded, notes, tasks, keys, maps, relevance_config, config, max_rows=max_rows)
    return evaluate(pairs, config)
