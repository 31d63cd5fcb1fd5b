"""Token relevance of a clinical note for a task description s_T (docs/METHOD.md, section Relevance).

Which prediction is explained (`explain`); "prompt" = one forward and one backward pass:
* "next" (default, the authors' reference code): the prompt is teacher-forced up to AND
  including the MIDDLE token of s_T (index (n - 1) // 2 of s_T's tokens, the reference's
  `int((start + end) / 2)`), and the largest logit at that last position is explained.
  1 prompt per pair.
* "max": teacher-forced up to just BEFORE the middle token; largest logit explained. For a
  1- or 2-token s_T the input holds none of s_T, and the top logit is the same whatever s_T
  is: every short task gets the SAME map. 1 prompt per pair.
* "target": as "max", but the logit of the middle token itself is explained. The input is the
  same for short tasks, but the explained logit differs, so the map is task-dependent, if
  close (SmolLM2: maps of different tasks on one note correlate 0.60-0.70; 0.59 on the
  synthetic notes of `python -m benchmarks relevance --variants`). 1 prompt per pair.
* "span": the prompt is teacher-forced through s_T (up to its last token, excluded); at each
  position that predicts a token of s_T the logit of THAT token is taken, and their SUM is
  back-propagated once. By linearity of the gradient (and of lxt's modified gradients),
  and because a causal model's logit at a position depends on the tokens up to it only, the
  map is exactly the sum of the "target" maps of every s_T token (each teacher-forced up to
  just before its own token). One backward: the cost of 1 prompt per pair (the prompt is
  longer by the s_T tokens; `logits_to_keep` = the number of s_T tokens).
* "contrastive": span(s_T) / n(s_T) - span(neutral) / n(neutral), raw, on the same note and
  template; n = the number of tokens of each description, so a long s_T does not outweigh a
  short neutral text by its length alone. Then normalised as usual ("clip" keeps only the
  tokens that support s_T more than the neutral text; "abs" also counts the opposite). The
  neutral description (`RelevanceConfig.neutral`) defaults to the template's: en "the
  patient", it "il paziente", es "el paciente"; a custom template needs one given. Cost:
  2 prompts per pair at most: the neutral prompt depends on the note only, so within one
  `compute_relevance` call it is computed once per distinct note and shared by its tasks
  (n pairs of one note: n + 1 prompts).
Only note tokens are scored, for every variant (template text, s_T and special tokens never).
`RelevanceResult.target_token` is the explained token: the middle token of s_T, or all of
s_T for "span"/"contrastive"; `predicted_token` is the top-logit token at each explained
position (teacher-forced, so for "span" it is what the model would write token by token).

Methods:
* attnlrp     AttnLRP through lxt's efficient mode (ml.lrp patches the family's module):
              relevance = (input embedding x its gradient) summed over the hidden dimension.
* grad_input  the same product without lxt patches (plain gradient x input).
* attention   attention from the explained position to each token, averaged over heads and
              layers (the paper's comparison; runs the model with eager attention); for
              "span"/"contrastive" the rows of the explained positions are summed.

Only note tokens are returned, with character offsets into the ORIGINAL note text.

Configuration: `RelevanceConfig` (frozen) holds everything that changes a map, validated, with a
short stable `key`; a relevance job stores it and every map its key. `compute_relevance` takes
one, or its fields as keywords.

Speed: parameters frozen (gradients only for the input embeddings), `logits_to_keep` = the
explained positions only (1, or s_T's tokens), prompts sorted by length and batched with LEFT
padding plus explicit position ids, so every prompt sees exactly the positions and keys it
would see alone and its explained positions are the batch's last columns. On CUDA a batch that
runs out of memory is halved and retried.
Shared prefix (`share_prefix`, default SHARE_PREFIX): the prompts of one note begin alike (the
note comes before s_T), so for the gradient methods a note's prompts run their common prefix
forward once and only their tails, and backward, per prompt (ml.relevance_sharing); each
prompt's map stays its own, equal to a full pass to float rounding. Measured on SmolLM2-135M
(bf16, 2 CPU threads, ~340-token prompts, 9 tasks a note): 1.9-2.2x the prompts/s of the
same path without it (`python -m benchmarks relevance`, two runs on a shared machine).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING

import numpy as np

from ml.prompts import TEMPLATES, PromptTemplate, build_prompt, get_template, template_label

METHODS = ("attnlrp", "attention", "grad_input")
EXPLAIN = ("next", "max", "target", "span", "contrastive")
NORMALISE = ("abs", "clip")
TRUNCATE = ("left", "right")
DTYPES = ("auto", "float32", "bfloat16", "float16")
TEMPLATE_ROOM = 256  # tokens kept free for the chat header, template and s_T
KEY_DIGITS = 10  # hex digits of the configuration hash in RelevanceConfig.key
SHARE_PREFIX = True  # compute_relevance's default: a note's prompts share their prefix's forward pass

if TYPE_CHECKING:  # torch is imported where it is used: configurations and keys need no torch
    import torch


class ConfigError(ValueError):
    """A relevance setting that cannot be used; `field` names it (for forms and commands)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class PromptError(ValueError):
    """A note-task pair that gives no prompt to explain (empty note, no note token before the
    task...). Its message never quotes the note, so callers may show it."""


@dataclass(frozen=True)
class RelevanceConfig:
    """Everything that changes a relevance map: stored with every job, its `key` with every map.

    Execution details that do not change the result (batch size, progress) are not here.
    Canonical on construction: a template text equal to a built-in becomes its name, and the
    contrastive neutral text defaults to the template's, so equal computations get equal keys.
    """

    method: str = "attnlrp"  # paper: AttnLRP, lxt efficient mode
    explain: str = "next"  # reference code: top logit after the middle token of s_T (see module doc)
    normalise: str = "abs"  # reference code: |r| / max|r| over the note tokens; "clip": max(r, 0) / max r
    template: str = "en"  # paper: "{note} Given the patient's medical history, the following is observed {task}"
    truncate: str = "right"  # reference code: text[:max_text_length] keeps the start; "left" keeps the end
    max_note_tokens: int | None = None  # None: the model's context minus TEMPLATE_ROOM tokens
    dtype: str = "auto"  # "auto": as the model was loaded (ml.relevance.preferred_dtype by default)
    neutral: str = ""  # "contrastive" only: the neutral description; "" -> the template's ("the patient")

    def __post_init__(self):
        def choose(name, value, allowed, what):
            if value not in allowed:
                raise ConfigError(name, f"unknown {what} {value!r}; choose one of {', '.join(allowed)}")

        choose("method", self.method, METHODS, "method")
        choose("explain", self.explain, EXPLAIN, "explain")
        choose("normalise", self.normalise, NORMALISE, "normalise")
        choose("truncate", self.truncate, TRUNCATE, "truncate")
        choose("dtype", self.dtype, DTYPES, "dtype")
        try:
            template = template_label(self.template)
        except (ValueError, TypeError) as exc:
            raise ConfigError("template", f"template: {exc}") from None
        object.__setattr__(self, "template", template)
        tokens = self.max_note_tokens
        if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
            raise ConfigError("max_note_tokens", "max_note_tokens must be a whole number >= 1, or None")
        if not isinstance(self.neutral, str):
            raise ConfigError("neutral", "the neutral description must be text")
        neutral = self.neutral.strip()
        if self.explain != "contrastive":
            if neutral:
                raise ConfigError("neutral", "a neutral description applies only to explain='contrastive'")
        elif not neutral:
            neutral = TEMPLATES[template].neutral if template in TEMPLATES else ""
            if not neutral:
                raise ConfigError(
                    "neutral",
                    "explain='contrastive' with a custom template needs a neutral "
                    "description (the built-in templates have one)",
                )
        object.__setattr__(self, "neutral", neutral)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> RelevanceConfig:
        """Inverse of to_dict(); missing fields take their defaults, unknown ones are an error."""
        if not isinstance(data, dict):
            raise ConfigError("config", "a relevance configuration must be an object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError("config", f"unknown relevance setting(s) {', '.join(unknown)}")
        return cls(**data)

    @property
    def key(self) -> str:
        """Short, stable identifier: "<method>-<explain>-<hash of every field>",
        e.g. "attnlrp-next-<10 hex digits>". The hash covers every field, so a field added later
        changes every key: such a change needs a migration that re-keys the stored maps (and the
        review rows that name them); tests pin the default key to catch it."""
        return config_key(self.to_dict())

    def kwargs(self) -> dict:
        return self.to_dict()


def config_key(settings: dict) -> str:
    """RelevanceConfig.key of a canonical settings dict (no validation)."""
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(canonical.encode("ascii")).hexdigest()[:KEY_DIGITS]
    return f"{settings['method']}-{settings['explain']}-{digest}"


def default_config_key(method: str, template: str) -> str:
    """The key of the default configuration of a method and a (stored, canonical) template:
    what every relevance map was made with before configurations were recorded."""
    return config_key({**RelevanceConfig().to_dict(), "method": method, "template": template})


@dataclass
class RelevanceResult:
    offsets: np.ndarray  # int32 (n_tokens, 2): [start, end) of each note token in the original note
    raw_scores: np.ndarray  # float32 (n_tokens,): relevance as computed
    scores: np.ndarray  # float32 (n_tokens,): normalised to [0, 1] over the note tokens
    target_token: str  # the explained token: s_T's middle token, or all of s_T ("span", "contrastive")
    predicted_token: str = ""  # the top-logit token at each explained position
    truncated: bool = False  # the note was cut to max_note_tokens


@dataclass
class EncodedPair:
    input_ids: list[int]  # prompt tokens up to the target token (included when include_target)
    note_index: np.ndarray  # positions of the note tokens in input_ids
    offsets: np.ndarray  # int32 (n, 2) into the original note
    target_id: int  # the middle token of s_T
    truncated: bool
    task_ids: list[int] = field(default_factory=list)  # every token of s_T, in order


def preferred_dtype(device: torch.device | str) -> torch.dtype:
    """Relevance dtype: bf16 on CUDA with bf16 support and on CPUs with native bf16
    instructions (AVX512-BF16 / AMX), fp32 elsewhere.

    Measured on this project's 2-core CPU (AVX512-BF16), SmolLM2-135M, ~260-340-token
    prompts: AttnLRP ~2.5x faster in bf16 than fp32; relevance Pearson 0.999 with fp32
    when the same logit is explained (0.9996 against the fp32 lxt-README baseline in
    benchmarks.relevance). With explain="next"/"max" a near-tie top token may differ
    between dtypes, and then a different logit is explained. Plain grad_input is unstable
    in bf16 (near-zero correlation with fp32): load an fp32 model to study it."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    if device.type == "cpu" and _cpu_has_native_bf16():
        return torch.bfloat16
    return torch.float32


def _cpu_has_native_bf16() -> bool:
    import torch

    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # pragma: no cover - old torch
        return False
    if capability not in ("AVX512", "AMX"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:  # pragma: no cover - non-Linux
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def encode_pair(
    tokenizer,
    note: str,
    task: str,
    *,
    template: PromptTemplate | str | None = None,
    chat: bool | None = None,
    chat_template_kwargs: dict | None = None,
    max_note_tokens: int | None = None,
    truncate: str = "right",
    include_target: bool = False,
    whole_task: bool = False,
) -> EncodedPair:
    """Tokenise one (note, task) prompt and locate the note tokens and the target token.

    input_ids end just before s_T's middle token; with include_target, just after it; with
    whole_task, just before s_T's LAST token (so the last len(task_ids) positions are the
    ones that predict the tokens of s_T).

    A token belongs to the note when its character span overlaps the note's span in the
    prompt; its offsets are clipped to the note (a token straddling the boundary, e.g. a
    whitespace run, keeps only its note part). Special tokens and template text never
    overlap the note, so they are excluded.
    """
    if not isinstance(note, str) or not note.strip():
        raise PromptError("note text is empty")
    if not isinstance(task, str) or not task.strip():
        raise PromptError("task description is empty")
    if truncate not in TRUNCATE:
        raise ValueError(f"truncate must be one of {TRUNCATE}")
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("relevance needs a fast tokenizer (character offsets)")
    template = get_template(template)

    shift, used, truncated = 0, note, False
    if max_note_tokens is not None:
        if max_note_tokens < 1:
            raise ValueError("max_note_tokens must be >= 1")
        spans = tokenizer(note, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        if len(spans) > max_note_tokens:
            truncated = True
            if truncate == "right":  # keep the beginning, as the reference's text[:max_len]
                used = note[: spans[max_note_tokens - 1][1]]
            else:  # keep the end
                shift = spans[len(spans) - max_note_tokens][0]
                used = note[shift:]

    prompt = build_prompt(tokenizer, template, used, task, chat=chat, chat_template_kwargs=chat_template_kwargs)
    enc = tokenizer(prompt.text, add_special_tokens=False, return_offsets_mapping=True)
    ids, spans = enc["input_ids"], np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    starts, ends = spans[:, 0], spans[:, 1]
    (n0, n1), (t0, t1) = prompt.note_span, prompt.task_span
    in_note = np.flatnonzero((ends > starts) & (starts < n1) & (ends > n0))
    in_task = np.flatnonzero((ends > starts) & (starts < t1) & (ends > t0))
    if len(in_task) == 0:
        raise PromptError("the task description produced no tokens")
    target = int(in_task[(len(in_task) - 1) // 2])
    in_note = in_note[in_note < target]
    if len(in_note) == 0:
        raise PromptError("note produced no tokens before the task description")
    offsets = np.stack([np.clip(starts[in_note], n0, n1), np.clip(ends[in_note], n0, n1)], axis=1)
    offsets = (offsets - n0 + shift).astype(np.int32)
    if include_target and whole_task:
        raise ValueError("include_target and whole_task are exclusive")
    end = int(in_task[-1]) if whole_task else target + 1 if include_target else target
    return EncodedPair(list(ids[:end]), in_note, offsets, int(ids[target]), truncated, [int(ids[i]) for i in in_task])


def compute_relevance(
    loaded,
    notes: list[str],
    task_descriptions: list[str],
    config: RelevanceConfig | None = None,
    *,
    batch_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    chat: bool | None = None,
    share_prefix: bool | None = None,
    **settings,
) -> list[RelevanceResult]:
    """Relevance of each note's tokens for its task description; one result per pair, in order.

    loaded: an ml.models.LoadedModel. notes and task_descriptions: equal-length lists.
    config: a RelevanceConfig, or its fields as keywords (method="grad_input", explain="span",
    template="it", normalise="clip", max_note_tokens=..., truncate=..., dtype=..., neutral=...),
    not both. See RelevanceConfig and the module docstring for their meaning.
    method "attnlrp" patches this process with lxt (see ml.lrp): it must not train afterwards.
    An explicit config.dtype must be the dtype the model is loaded in ("auto": any).
    batch_size: prompts per forward pass (None: 1 on CPU, where batching gains nothing on
    two cores, 16 on CUDA); on CUDA it halves on out-of-memory. Results do not depend on it.
    progress(done, total) is called after each batch, in prompts ("contrastive" adds one
    prompt per distinct note).
    share_prefix: run the common prefix of a note's prompts once (module doc; None:
    SHARE_PREFIX). An execution detail like batch_size: maps equal to float rounding, the
    configuration key unchanged; "attention" never shares. batch_size also bounds the rows
    over one shared prefix (None: 16, on CPU too).
    Notes longer than config.max_note_tokens are cut (the task part never is); None: the
    model's context (max_position_embeddings) minus TEMPLATE_ROOM tokens.
    """
    import torch

    if config is None:
        config = RelevanceConfig(**settings)
    elif settings:
        raise TypeError(f"give a RelevanceConfig or its fields as keywords, not both ({', '.join(settings)})")
    if len(notes) != len(task_descriptions):
        raise ValueError("notes and task_descriptions must have the same length")
    tokenizer, model = loaded.tokenizer, loaded.model
    if config.dtype != "auto" and getattr(loaded, "dtype", None) != getattr(torch, config.dtype):
        raise ValueError(
            f"this configuration asks for {config.dtype}, but the model is loaded in "
            f"{loaded.dtype}; load it with dtype={config.dtype!r}"
        )
    explain, method = config.explain, config.method
    max_note_tokens = config.max_note_tokens if config.max_note_tokens is not None else _context_limit(model)
    encode = dict(
        template=get_template(config.template),
        chat=chat,
        chat_template_kwargs=loaded.family.chat_template_kwargs,
        max_note_tokens=max_note_tokens,
        truncate=config.truncate,
    )
    whole_task = explain in ("span", "contrastive")
    prompts: list[tuple[EncodedPair, list[int] | None]] = []  # (prompt, ids explained; None: top logit)
    prompt_notes: list[str] = []  # the note of each prompt (its prompts may share their prefix)
    neutral_prompt: dict[str, int] = {}  # note text -> index of its neutral prompt ("contrastive")
    pairs: list[tuple[int, int | None]] = []  # per pair: (its prompt, its neutral prompt or None)
    for note, task in zip(notes, task_descriptions):
        enc = encode_pair(tokenizer, note, task, include_target=explain == "next", whole_task=whole_task, **encode)
        prompts.append((enc, _explained(enc, explain)))
        prompt_notes.append(note)
        main = len(prompts) - 1
        if explain != "contrastive":
            pairs.append((main, None))
            continue
        if note not in neutral_prompt:
            other = encode_pair(tokenizer, note, config.neutral, whole_task=True, **encode)
            if not np.array_equal(other.offsets, enc.offsets):  # the note precedes the task: never expected
                raise PromptError(
                    "the neutral prompt tokenised the note differently (a custom template whose task "
                    "follows the note without a separator?)"
                )
            prompts.append((other, other.task_ids))
            prompt_notes.append(note)
            neutral_prompt[note] = len(prompts) - 1
        pairs.append((main, neutral_prompt[note]))

    import ml.lrp

    if method == "attnlrp":
        ml.lrp.patch(loaded.family)
    elif method == "grad_input" and ml.lrp.is_patched():
        raise RuntimeError(
            "grad_input needs an unpatched process: lxt's AttnLRP patches are "
            "applied here, so its gradients would be AttnLRP relevance"
        )
    # Rows per pass over a shared prefix: the whole group on CPU too, where its batched
    # backward through the prefix is what pays (see ml.relevance_sharing).
    group_rows = batch_size or 16
    if batch_size is None:
        batch_size = 16 if model.device.type == "cuda" else 1
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    share = SHARE_PREFIX if share_prefix is None else bool(share_prefix)
    groups, alone = ([], range(len(prompts)))
    if share and method != "attention":
        groups, alone = _prefix_groups(prompts, prompt_notes)

    raw: list[np.ndarray | None] = [None] * len(prompts)  # note-token relevance of each prompt
    predicted: list[list[int] | None] = [None] * len(prompts)
    order = sorted(alone, key=lambda i: len(prompts[i][0].input_ids))
    done = 0

    def plain(indices):
        return _run_batch(
            model, [prompts[i][0].input_ids for i in indices], pad_id, method, [prompts[i][1] for i in indices]
        )

    def keep(indices, rows, tops):
        nonlocal done
        for i, row, top in zip(indices, rows, tops):
            enc = prompts[i][0]
            raw[i] = row[len(row) - len(enc.input_ids) + enc.note_index].astype(np.float32)
            predicted[i] = top
        done += len(indices)
        if progress is not None:
            progress(done, len(prompts))

    with _relevance_mode(model, method):
        if groups:
            from ml.relevance_sharing import run_group
        for group, shared in groups:
            (rows, tops), group_rows = _halving_on_oom(
                group_rows,
                functools.partial(
                    run_group,
                    model,
                    [prompts[i][0].input_ids for i in group],
                    shared,
                    pad_id,
                    [prompts[i][1] for i in group],
                ),
            )
            keep(group, rows, tops)
        start = 0
        while start < len(order):
            (rows, tops), batch_size = _halving_on_oom(batch_size, lambda n, at=start: plain(order[at : at + n]))
            keep(order[start : start + len(rows)], rows, tops)
            start += len(rows)

    results = []
    for main, neutral in pairs:
        enc = prompts[main][0]
        scores = raw[main]
        if neutral is not None:
            other = prompts[neutral][0]
            scores = (scores / len(enc.task_ids) - raw[neutral] / len(other.task_ids)).astype(np.float32)
        explained = enc.task_ids if whole_task else [enc.target_id]
        results.append(
            RelevanceResult(
                offsets=enc.offsets,
                raw_scores=scores,
                scores=normalise_scores(scores, config.normalise),
                target_token=tokenizer.decode(explained),
                predicted_token=tokenizer.decode(predicted[main]),
                truncated=enc.truncated,
            )
        )
    return results


def _prefix_groups(
    prompts: list[tuple[EncodedPair, list[int] | None]], prompt_notes: list[str]
) -> tuple[list[tuple[list[int], int]], list[int]]:
    """-> ([(prompt indices of one note, tokens they share)], the other prompts' indices).
    A note's prompts form a group when their common prefix is long enough to share
    (ml.relevance_sharing.group_prefix); the explained positions always stay in the tails."""
    from ml.relevance_sharing import group_prefix

    by_note: dict[str, list[int]] = {}
    for i, note in enumerate(prompt_notes):
        by_note.setdefault(note, []).append(i)
    groups, alone = [], []
    for indices in by_note.values():
        shared = group_prefix(
            [prompts[i][0].input_ids for i in indices], [len(prompts[i][1]) if prompts[i][1] else 1 for i in indices]
        )
        if shared:
            groups.append((indices, shared))
        else:
            alone.extend(indices)
    return groups, alone


def _halving_on_oom(rows: int, attempt: Callable[[int], tuple]) -> tuple[tuple, int]:
    """(attempt(rows), rows); on CUDA out-of-memory, tried again with half as many rows."""
    import torch

    while True:
        try:
            return attempt(rows), rows
        except torch.cuda.OutOfMemoryError:
            if rows == 1:
                raise
            rows = max(1, rows // 2)
            torch.cuda.empty_cache()


def _explained(enc: EncodedPair, explain: str) -> list[int] | None:
    """Token ids whose logits a prompt explains, at its last len(ids) positions (None: the top
    logit at its last position)."""
    if explain in ("span", "contrastive"):
        return enc.task_ids
    if explain == "target":
        return [enc.target_id]
    return None  # "next", "max"


def _context_limit(model) -> int | None:
    """Default note limit: the model's context minus room for the chat header and template."""
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions is None:
        positions = getattr(getattr(model.config, "text_config", None), "max_position_embeddings", None)
    return max(positions - TEMPLATE_ROOM, 1) if positions else None


def normalise_scores(raw: np.ndarray, how: str = "abs") -> np.ndarray:
    values = np.abs(raw) if how == "abs" else np.clip(raw, 0.0, None)
    top = float(values.max()) if values.size else 0.0
    if top <= 0.0 or not np.isfinite(top):
        return np.zeros_like(values, dtype=np.float32)
    return (values / top).astype(np.float32)


def _run_batch(
    model, batch: list[list[int]], pad_id: int, method: str, explained: list[list[int] | None]
) -> tuple[np.ndarray, list[list[int]]]:
    """-> (relevance per position (B, L) as float32 numpy, top predicted ids at each prompt's
    explained positions). explained[b]: the token ids whose logits prompt b explains, one per
    position at its end (None: its largest logit at the last position); their sum is explained."""
    import torch

    width = max(len(ids) for ids in batch)
    device = model.device
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, ids in enumerate(batch):  # left padding: every prompt ends in the last column
        input_ids[row, width - len(ids) :] = torch.tensor(ids)
        mask[row, width - len(ids) :] = 1
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    targets = ExplainedTargets.of(explained, device)
    keep = targets.keep
    input_ids, mask, position_ids = input_ids.to(device), mask.to(device), position_ids.to(device)
    kwargs = {"attention_mask": mask, "position_ids": position_ids, "use_cache": False, "logits_to_keep": keep}

    if method == "attention":
        with torch.no_grad(), _last_rows_attention(model, keep) as rows:
            logits = model(input_ids=input_ids, **kwargs).logits[:, -keep:, :]
        attention = torch.stack(rows).mean(0)  # (B, keep, L)
        relevance = (attention * targets.chosen[..., None]).sum(1)
    else:
        with torch.enable_grad():
            embeds = model.get_input_embeddings()(input_ids).detach().requires_grad_(True)
            logits = model(inputs_embeds=embeds, **kwargs).logits[:, -keep:, :]
            # Prompts are independent, so the gradient of the sum is each prompt's gradient.
            targets.total(logits).backward()
        relevance = input_relevance(embeds)
    return relevance.float().cpu().numpy(), targets.predicted(logits)


def input_relevance(embeds: torch.Tensor) -> torch.Tensor:
    """Relevance per position: input embedding x its gradient, summed over the hidden dimension."""
    return (embeds.detach().float() * embeds.grad.float()).sum(-1)


@dataclass
class ExplainedTargets:
    """What a batch of prompts explains, aligned on `keep` columns that end at each prompt's
    last explained position: `chosen` marks each prompt's own columns (its last len(ids), or
    1), `target` the ids whose logits are explained there, `by_top` the prompts explaining
    their largest logit instead."""

    keep: int
    counts: list[int]
    chosen: torch.Tensor  # bool (B, keep)
    target: torch.Tensor  # long (B, keep)
    by_top: torch.Tensor  # bool (B,)

    @classmethod
    def of(cls, explained: list[list[int] | None], device) -> ExplainedTargets:
        import torch

        counts = [len(ids) if ids else 1 for ids in explained]
        keep = max(counts)
        chosen = torch.zeros((len(explained), keep), dtype=torch.bool)
        target = torch.zeros((len(explained), keep), dtype=torch.long)
        for row, (ids, n) in enumerate(zip(explained, counts)):
            chosen[row, keep - n :] = True
            if ids:
                target[row, keep - n :] = torch.tensor(ids)
        by_top = torch.tensor([not ids for ids in explained])
        return cls(keep, counts, chosen.to(device), target.to(device), by_top.to(device))

    def total(self, logits: torch.Tensor) -> torch.Tensor:
        """The sum of every prompt's explained logits; logits (B, keep, vocab)."""
        import torch

        ids = torch.where(self.by_top[:, None], logits.detach().argmax(dim=-1), self.target)
        explained = logits.gather(2, ids[..., None])[..., 0]
        return torch.where(self.chosen, explained, torch.zeros_like(explained)).sum()

    def predicted(self, logits: torch.Tensor) -> list[list[int]]:
        """The top-logit token at each prompt's explained positions."""
        top = logits.detach().argmax(dim=-1).tolist()
        return [row[self.keep - n :] for row, n in zip(top, self.counts)]


@contextlib.contextmanager
def _relevance_mode(model, method: str):
    """eval mode, frozen parameters, eager attention for the attention method; restored after."""
    was_training = model.training
    flags = [(p, p.requires_grad) for p in model.parameters()]
    previous_attn = getattr(model.config, "_attn_implementation", None)
    model.eval()
    for p, _ in flags:
        p.requires_grad_(False)
    if method == "attention" and previous_attn != "eager":
        model.set_attn_implementation("eager")  # sdpa does not return attention weights
    try:
        yield
    finally:
        if method == "attention" and previous_attn not in (None, "eager"):
            model.set_attn_implementation(previous_attn)
        for p, flag in flags:
            p.requires_grad_(flag)
        model.train(was_training)


@contextlib.contextmanager
def _last_rows_attention(model, keep: int = 1):
    """Collect, per decoder layer, the head-averaged attention of the LAST `keep` positions.

    Eager attention modules return (output, weights (B, H, L, L)); a hook keeps only those
    query rows, so memory stays O(layers x keep x L) instead of O(layers x heads x L^2).
    """
    rows: list[torch.Tensor] = []

    def keep_last_rows(_module, _args, output):
        weights = output[1]
        if weights is not None:
            rows.append(weights[:, :, -keep:, :].float().mean(dim=1))

    handles = [m.register_forward_hook(keep_last_rows) for m in _decoder_attention_modules(model)]
    try:
        yield rows
        if not rows:
            raise RuntimeError("no attention weights were captured; is the model using eager attention?")
    finally:
        for h in handles:
            h.remove()


def _decoder_attention_modules(model) -> list[torch.nn.Module]:
    return [m for name, m in model.named_modules() if name.endswith("self_attn") and hasattr(m, "layer_idx")]
