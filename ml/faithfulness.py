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

Random baseline with power: each pair draws R random rankings (`random_draws`, default 10;
draw 0 is ml.localisation.random_scores seeded by `seed` and the pair, draw r > 0 adds r to the
key), each scored at every fraction and kind like a map; the pair's random score is their mean,
so every (kind, fraction) cell has a value on every pair. Verdicts come from the PAIRED
difference, method - random on the same pair (`paired` in a method's summary), with a percentile
bootstrap CI over pairs per measure: the pair-to-pair spread of F cancels, which is what lets
100 pairs separate methods. Comprehensiveness beats random when the difference's CI lies above 0,
sufficiency when below 0 (lower is better); an interval of zero width (every pair's difference
equal, e.g. a constant F) or built on fewer than MIN_PAIRS pairs gives no verdict and says why.
Maps of several methods on the same pairs share the full row and the random rows.

Cost in forward passes (one pass = one prompt row through the model, no backward): per pair
1 (full) + 2 x len(FRACTIONS) per method + 2 x len(FRACTIONS) x R (random) = 111 with the default
5 fractions, 10 draws and one method, beyond the map itself; a pair's rows have the same length and
run as one batch (one forward call per chunk of `max_rows` rows). `FaithfulnessResult.forward_passes`
counts them. `max_rows` (None: `rows_for_memory`) is a memory bound, not a speed-up on the CPU: a row
of an E3C prompt (234 tokens, SmolLM2-135M, one thread) cost the same alone as in a batch of 32
(docs/ml-cli.md#faithfulness); the batch's values equal one row a pass up to fp32 rounding (tests).

Summary: means over pairs with 95% percentile bootstrap CIs over pairs (the resamples of
ml.metrics.bootstrap_ci, `resample_indices`; the same resamples for every measure, so the paired
differences' CIs are those of the difference itself). No gold is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ml.localisation import random_scores
from ml.metrics import resample_indices
from ml.relevance.neutral import neutral_token_id  # noqa: F401  (the replacement token: faithfulness's API)

FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5)
RANDOM_DRAWS = 10  # random rankings per pair (module doc)
MIN_PAIRS = 10  # fewer pairs give no verdict
# one method: full row, its deletions and insertions, those of every random draw
PASSES_PER_PAIR = 1 + 2 * len(FRACTIONS) + 2 * len(FRACTIONS) * RANDOM_DRAWS
NEUTRAL = ("pad", "space")
QUANTITIES = ("logprob", "logit")
KINDS = ("comprehensiveness", "sufficiency")


@dataclass(frozen=True)
class FaithfulnessConfig:
    fractions: tuple[float, ...] = FRACTIONS  # shares of the note's tokens hidden or kept
    neutral: str = "pad"  # replacement: the tokenizer's pad token (else eos, unk); "space": the " " token
    quantity: str = "logprob"  # F: log-probability of the explained token(s); "logit": the raw logit
    seed: int = 0  # random rankings and bootstrap
    random_draws: int = RANDOM_DRAWS  # random rankings per pair; the pair's random score is their mean
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
        if self.random_draws < 1:
            raise ValueError("random_draws must be >= 1")
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


def random_draw(n_tokens: int, key: tuple[str, str], seed: int, draw: int) -> np.ndarray:
    """Scores of random ranking `draw` of a pair: draw 0 is ml.localisation's random baseline."""
    return random_scores(n_tokens, key if draw == 0 else (*key, str(draw)), seed)


def _top_rows(order: np.ndarray, n: int, fractions: Sequence[float]) -> list[np.ndarray]:
    """Deletion rows (top k replaced) then insertion rows (only the top k kept), per fraction."""
    rows = []
    for keep_top in (False, True):
        for f in fractions:
            row = np.zeros(n, dtype=bool)
            row[order[: n_kept(n, f)]] = True
            rows.append(~row if keep_top else row)
    return rows


def _curves(full: float, values: np.ndarray, m: int) -> dict:
    """A ranking's deletion/insertion values (2m) as its curves and AOPCs."""
    deletion, insertion = values[:m], values[m : 2 * m]
    return {
        "deletion": deletion.tolist(),
        "insertion": insertion.tolist(),
        "comprehensiveness": (full - deletion).tolist(),
        "sufficiency": (full - insertion).tolist(),
        "aopc_comprehensiveness": float(np.mean(full - deletion)),
        "aopc_sufficiency": float(np.mean(full - insertion)),
    }


def evaluate(pairs: Sequence[PairInput], config: FaithfulnessConfig | None = None) -> FaithfulnessResult:
    """Per-pair deletion/insertion values of every map and of the random draws (their mean),
    then the summary. Pairs of a larger sample may be evaluated in batches: `summarise` takes
    every batch's records (a pair's draws depend on its key and the seed only)."""
    config = config or FaithfulnessConfig()
    methods = list(pairs[0].maps) if pairs else []
    rows_out, passes, calls = [], 0, 0
    for pair in pairs:
        record, rows, pair_calls = evaluate_pair(pair, methods, config)
        rows_out.append(record)
        passes += rows
        calls += pair_calls
    summary = summarise(rows_out, methods, config)
    return FaithfulnessResult(rows_out, summary, passes, calls)


def evaluate_pair(pair: PairInput, methods: Sequence[str], config: FaithfulnessConfig) -> tuple[dict, int, int]:
    """One pair's record (`evaluate`), its forward passes (rows) and its scorer's calls."""
    fractions, m, draws = config.fractions, len(config.fractions), config.random_draws
    if list(pair.maps) != list(methods):
        raise ValueError("every pair needs maps of the same methods, in the same order")
    n = len(next(iter(pair.maps.values())))
    if n == 0 or any(len(s) != n for s in pair.maps.values()):
        raise ValueError(f"pair {pair.key}: maps must cover the same, non-empty note tokens")
    replace = [np.zeros(n, dtype=bool)]  # row 0: the full note
    for method in methods:
        replace += _top_rows(ranking(pair.maps[method]), n, fractions)
    for r in range(draws):
        replace += _top_rows(ranking(random_draw(n, pair.key, config.seed, r)), n, fractions)
    calls_before = getattr(pair.scorer, "calls", 0)
    values = np.asarray(pair.scorer(np.stack(replace)), dtype=np.float64)
    calls = getattr(pair.scorer, "calls", calls_before + 1) - calls_before
    full = float(values[0])
    record = {"note_id": pair.key[0], "task": pair.key[1], "n_tokens": n, "full": full, "methods": {}}
    for j, method in enumerate(methods):
        record["methods"][method] = _curves(full, values[1 + 2 * m * j : 1 + 2 * m * (j + 1)], m)
    start = 1 + 2 * m * len(methods)
    random = values[start:].reshape(draws, 2 * m).mean(0)
    record["random"] = {"draws": draws, **_curves(full, random, m)}
    return record, len(replace), calls


# ---------------------------------------------------------------- summary

MEASURES = ("aopc_comprehensiveness", "aopc_sufficiency")
CURVES = ("comprehensiveness", "sufficiency", "deletion", "insertion")


def summarise(records: Sequence[dict], methods: Sequence[str], config: FaithfulnessConfig) -> dict:
    """Means over pairs with percentile bootstrap CIs, the random draws' likewise, and per method
    the paired difference (method - random on the same pair) with its CI, on the same resamples."""
    n, fractions = len(records), list(config.fractions)
    out: dict = {"n_pairs": n, "fractions": fractions, "config": asdict(config), "methods": {}}
    if n == 0:
        return out
    draws = list(resample_indices(n, config.n_resamples, config.seed))
    counts = np.concatenate([np.apply_along_axis(np.bincount, 1, d, minlength=n) for d in draws]).astype(np.float64)
    alpha = (1 - config.confidence) / 2

    def with_ci(name: str, v: np.ndarray, into: dict) -> None:
        """v (pairs, q): the mean over pairs and its percentile CI from the resamples."""
        estimate, resampled = v.mean(0), counts @ v / n
        low, high = np.quantile(resampled, [alpha, 1 - alpha], axis=0)
        scalar = estimate.shape == (1,)
        into[name] = float(estimate[0]) if scalar else estimate.tolist()
        into[f"{name}_ci"] = (
            [float(low[0]), float(high[0])] if scalar else [[float(a), float(b)] for a, b in zip(low, high)]
        )

    def block_of(per: Sequence[dict]) -> dict:
        block: dict = {}
        for name in MEASURES:
            with_ci(name, np.array([[p[name]] for p in per]), block)
        for name in CURVES:
            with_ci(name, np.array([p[name] for p in per]), block)
        return block

    random = [r["random"] for r in records]
    for method in methods:
        per = [r["methods"][method] for r in records]
        block = block_of(per)
        paired: dict = {}
        for name in MEASURES:
            with_ci(name, np.array([[p[name] - q[name]] for p, q in zip(per, random)]), paired)
        for name in ("comprehensiveness", "sufficiency"):
            with_ci(name, np.array([p[name] for p in per]) - np.array([q[name] for q in random]), paired)
        block["paired"] = paired
        out["methods"][method] = block
    with_ci("full", np.array([[r["full"]] for r in records]), out)
    out["random"] = {"draws": config.random_draws, **block_of(random)}
    return out


#: what a paired difference's interval says: (verdict when it lies above 0, when below 0)
_SIDES = {
    "comprehensiveness": ("beats random", "worse than random"),
    "sufficiency": ("worse than random", "beats random"),
}


def measure_verdict(n_pairs: int, ci, kind: str, *, min_pairs: int = MIN_PAIRS) -> dict:
    """{"verdict": "beats random" | "worse than random" | "cannot tell" | None, "reason"} of one
    paired difference (method - random) on `kind` ("comprehensiveness": higher is better,
    "sufficiency": lower is better). None, with the reason, for fewer than `min_pairs` pairs, an
    undefined interval or one of zero width (every resample's mean the same: no spread to judge)."""
    if n_pairs < min_pairs:
        return {"verdict": None, "reason": f"no verdict: {n_pairs} pairs, fewer than {min_pairs}"}
    if not ci or len(ci) != 2 or not all(isinstance(v, (int, float)) and np.isfinite(v) for v in ci):
        return {"verdict": None, "reason": "no verdict: the interval is undefined"}
    low, high = ci
    if not high > low:
        return {
            "verdict": None,
            "reason": f"no verdict: the interval has zero width (every pair's difference is {low:.3g})",
        }
    above, below = _SIDES[kind]
    if low > 0:
        return {"verdict": above, "reason": f"the paired difference's CI ({low:.3f} to {high:.3f}) lies above 0"}
    if high < 0:
        return {"verdict": below, "reason": f"the paired difference's CI ({low:.3f} to {high:.3f}) lies below 0"}
    return {"verdict": "cannot tell", "reason": f"the paired difference's CI ({low:.3f} to {high:.3f}) contains 0"}


def verdicts(summary: Mapping, *, min_pairs: int = MIN_PAIRS) -> dict[str, dict]:
    """Per method, whether its AOPCs beat the random rankings', from the paired differences
    (`measure_verdict` per kind, with its reason); `faithful` needs both. A summary stored before
    paired differences existed (no "paired") gets no verdict, saying so."""
    n = int(summary.get("n_pairs") or 0)
    out = {}
    for method, block in (summary.get("methods") or {}).items():
        paired = block.get("paired")
        v: dict = {}
        for kind in ("comprehensiveness", "sufficiency"):
            if paired is None:
                v[kind] = {"verdict": None, "reason": "no verdict: measured before paired differences"}
            else:
                v[kind] = measure_verdict(n, paired.get(f"aopc_{kind}_ci"), kind, min_pairs=min_pairs)
            v[f"{kind}_beats_random"] = v[kind]["verdict"] == "beats random"
        v["faithful"] = v["comprehensiveness_beats_random"] and v["sufficiency_beats_random"]
        out[method] = v
    return out


def verdict_text(v: Mapping) -> str:
    """A method's verdicts in a few words: "both", the kind that beats random, "no", or why there
    is no verdict (a verdict stored before paired differences has no reasons: its booleans only)."""
    if v.get("faithful"):
        return "both"
    beats = [k for k in ("comprehensiveness", "sufficiency") if v.get(f"{k}_beats_random")]
    if beats:
        return beats[0]
    reasons = {v[k]["reason"] for k in ("comprehensiveness", "sufficiency") if v.get(k) and v[k].get("verdict") is None}
    return "; ".join(sorted(reasons)) if reasons else "no"


def markdown(summary: Mapping, *, min_pairs: int = MIN_PAIRS) -> str:
    """The summary as a markdown table: one row per method (its AOPCs and the paired differences
    with the random rankings), then the random rankings."""

    def cell(block, name):
        value, (low, high) = block.get(name), block.get(f"{name}_ci") or (None, None)
        return f"{_fmt(value)} ({_fmt(low)}-{_fmt(high)})"

    fractions = summary.get("fractions") or []
    head = ["ranking", "AOPC comprehensiveness (95% CI)", "AOPC sufficiency (95% CI)"]
    head += ["comprehensiveness - random (paired, 95% CI)", "sufficiency - random (paired, 95% CI)"]
    head += [f"deletion at {f:g}" for f in fractions] + ["beats random"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    verdict = verdicts(summary, min_pairs=min_pairs)
    for method, block in (summary.get("methods") or {}).items():
        paired = block.get("paired") or {}
        cells = [method, cell(block, "aopc_comprehensiveness"), cell(block, "aopc_sufficiency")]
        cells += [cell(paired, "aopc_comprehensiveness"), cell(paired, "aopc_sufficiency")]
        cells += [_fmt(d) for d in block.get("deletion", [])]
        lines.append("| " + " | ".join([*cells, verdict_text(verdict[method])]) + " |")
    random = summary.get("random") or {}
    if random:
        name = f"random ({random.get('draws', 1)} draws a pair)"
        cells = [name, cell(random, "aopc_comprehensiveness"), cell(random, "aopc_sufficiency"), "", ""]
        cells += [_fmt(d) for d in random.get("deletion", [])]
        lines.append("| " + " | ".join([*cells, ""]) + " |")
    full = summary.get("full")
    lines += ["", f"{summary.get('n_pairs', 0)} pairs; F(full prompt) mean {_fmt(full)}."]
    return "\n".join(lines)


def _fmt(value) -> str:
    return "n/a" if not isinstance(value, (int, float)) or not np.isfinite(value) else f"{value:.3f}"


# ---------------------------------------------------------------- a language model's scorer

MAX_ROWS = 32  # rows a forward call at most
ROW_MEMORY = 512 * 2**20  # bytes of activations a forward call may hold (rows_for_memory)


def rows_for_memory(model, length: int, budget: int = ROW_MEMORY) -> int:
    """Rows of `length` tokens one forward call of `model` may run (1 to MAX_ROWS) for its
    activations to stay within `budget` bytes: a row holds, in one layer at a time (no grad),
    about length x (3 x intermediate + 4 x hidden) values (the MLP's gate, up and product, the
    residual, normed input and attention output) and heads x length^2 attention scores (the math
    attention kernel; fused ones hold fewer), each of the model's dtype. SmolLM2-135M: 32 rows up to
    399 tokens, 8 at 1024, 2 at 2048; the logits are cut to the explained positions (logits_to_keep)."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    hidden = int(getattr(config, "hidden_size", 0) or 0)
    intermediate = int(getattr(config, "intermediate_size", 0) or 4 * hidden)
    heads = int(getattr(config, "num_attention_heads", 0) or 1)
    size = getattr(getattr(model, "dtype", None), "itemsize", 4)
    per_row = size * (length * (3 * intermediate + 4 * hidden) + heads * length * length)
    return max(1, min(MAX_ROWS, budget // max(per_row, 1)))


class ModelScorer:
    """F of a (note, task) prompt with note tokens replaced, for a causal LM (module doc).

    The prompt and the note tokens are exactly ml.relevance's (`encode_pair` with the
    configuration's template, truncation and explained positions), so a map's i-th score is
    the i-th note token here. Rows of one call run as one batch (chunks of `max_rows`; None:
    `rows_for_memory` of the prompt's length) of equal length: no padding. For "next"/"max"
    the first row must be the full prompt: its top token is the one explained in every row.
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
        max_rows: int | None = None,
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
        self.neutral_id = neutral_id
        self.max_rows = max_rows or rows_for_memory(loaded.model, len(self.enc.input_ids))
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
        with torch.inference_mode():
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
    max_rows: int | None = None,
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
    max_rows: int | None = None,
    checkpoint=None,
    progress: Callable[[str], None] | None = None,
) -> FaithfulnessResult:
    """Maps of each method (ml.relevance.compute_relevance with `relevance_config`, its method
    replaced; in ml.relevance.methods.run_order, since AttnLRP patches this process), then
    `evaluate` on the model.

    checkpoint: an ml.faithfulness_checkpoint.Checkpoint; then each note's maps of a method (one
    compute_relevance call over the note's drawn pairs, so a note's prompts still share their
    prefix) and each pair's record are appended to it as they finish, what it already holds is
    not computed again, and the result is built from it (see that module)."""
    from dataclasses import replace

    from ml.relevance import compute_relevance
    from ml.relevance.methods import run_order

    ordered = run_order(methods)
    if checkpoint is None:
        maps = {
            m: compute_relevance(
                loaded, list(notes), list(tasks), replace(relevance_config, method=m), batch_size=batch_size
            )
            for m in ordered
        }
        maps = {m: maps[m] for m in dict.fromkeys(methods)}
        pairs = model_pairs(loaded, notes, tasks, keys, maps, relevance_config, config, max_rows=max_rows)
        return evaluate(pairs, config)

    config = config or FaithfulnessConfig()
    keys = [tuple(k) for k in keys]
    methods = list(dict.fromkeys(methods))
    by_note: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        by_note.setdefault(key[0], []).append(i)
    for m in ordered:
        for note_id, group in by_note.items():
            todo = [i for i in group if (m, keys[i]) not in checkpoint.maps]
            if not todo:
                continue
            if len(todo) != len(group):  # a note's maps of a method are one line: all or none
                raise ValueError(f"checkpoint holds part of note {note_id!r}'s {m} maps")
            results = compute_relevance(
                loaded,
                [notes[i] for i in todo],
                [tasks[i] for i in todo],
                replace(relevance_config, method=m),
                batch_size=batch_size,
            )
            checkpoint.add_maps(m, [keys[i] for i in todo], results)
            if progress:
                progress(f"{m} maps of note {note_id}: {len(todo)} pairs")
    for i, key in enumerate(keys):
        if key in checkpoint.records:
            continue
        maps = {m: [checkpoint.maps[(m, key)]] for m in methods}
        (pair,) = model_pairs(loaded, [notes[i]], [tasks[i]], [key], maps, relevance_config, config, max_rows=max_rows)
        record, passes, calls = evaluate_pair(pair, methods, config)
        checkpoint.add_record(key, record, passes, calls)
        if progress:
            progress(f"pair {i + 1}/{len(keys)} scored")
    return checkpoint.result(keys, methods, config)
