"""Token relevance of a clinical note for a task description s_T (METHOD.md, step 2).

Which prediction is explained (`explain`):
* "next" (default, the authors' reference code): the prompt is teacher-forced up to AND
  including the MIDDLE token of s_T (index (n - 1) // 2 of s_T's tokens, the reference's
  `int((start + end) / 2)`), and the largest logit at that last position is explained.
  Measured on SmolLM2: this is the only variant whose relevance depends on a short s_T.
  With the middle token left out, a 1-token s_T (and, since the middle of two tokens is
  the first, a 2-token one) does not appear in the input at all, so "max" below gives the
  same relevance for every such task.
* "max": teacher-forced up to just BEFORE the middle token; largest logit explained.
* "target": as "max", but the logit of the middle token itself is explained.
`RelevanceResult.target_token` is always the middle token; `predicted_token` is the
top-logit token at the explained position.

Methods:
* attnlrp     AttnLRP through lxt's efficient mode (ml.lrp patches the family's module):
              relevance = (input embedding x its gradient) summed over the hidden dimension.
* grad_input  the same product without lxt patches (plain gradient x input).
* attention   attention from the last position to each token, averaged over heads and
              layers (the paper's comparison; runs the model with eager attention).

Only note tokens are returned, with character offsets into the ORIGINAL note text.

Speed: parameters frozen (gradients only for the input embeddings), `logits_to_keep=1`
(the vocabulary projection only for the last position), prompts sorted by length and
batched with LEFT padding plus explicit position ids, so every prompt sees exactly the
positions and keys it would see alone and its last position is the batch's last column.
On CUDA a batch that runs out of memory is halved and retried.
"""
from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch

from ml.prompts import PromptTemplate, build_prompt, get_template

METHODS = ("attnlrp", "attention", "grad_input")
EXPLAIN = ("next", "max", "target")
NORMALISE = ("abs", "clip")
TRUNCATE = ("left", "right")
TEMPLATE_ROOM = 256  # tokens kept free for the chat header, template and s_T


@dataclass
class RelevanceConfig:
    """Relevance settings, saved with every run: `compute_relevance(loaded, notes, tasks, **config.kwargs())`."""

    method: str = "attnlrp"  # paper: AttnLRP, lxt efficient mode
    template: str = "en"  # paper: "{note} Given the patient's medical history, the following is observed {task}"
    explain: str = "next"  # reference code: top logit at the middle token of s_T
    normalise: str = "abs"  # reference code: |r| / max|r| over the note tokens
    max_note_tokens: int | None = None  # None: the model's context minus TEMPLATE_ROOM tokens
    truncate: str = "right"  # reference code: text[:max_text_length] keeps the start
    batch_size: int | None = None  # None: 1 on CPU, 16 on CUDA (halved on out-of-memory)

    def kwargs(self) -> dict:
        return asdict(self)


@dataclass
class RelevanceResult:
    offsets: np.ndarray  # int32 (n_tokens, 2): [start, end) of each note token in the original note
    raw_scores: np.ndarray  # float32 (n_tokens,): relevance as computed
    scores: np.ndarray  # float32 (n_tokens,): normalised to [0, 1] over the note tokens
    target_token: str  # the middle token of s_T
    predicted_token: str = ""  # the top-logit token at the explained position
    truncated: bool = False  # the note was cut to max_note_tokens


@dataclass
class EncodedPair:
    input_ids: list[int]  # prompt tokens up to the target token (included when include_target)
    note_index: np.ndarray  # positions of the note tokens in input_ids
    offsets: np.ndarray  # int32 (n, 2) into the original note
    target_id: int
    truncated: bool


def preferred_dtype(device: torch.device | str) -> torch.dtype:
    """Relevance dtype: bf16 on CUDA with bf16 support and on CPUs with native bf16
    instructions (AVX512-BF16 / AMX), fp32 elsewhere.

    Measured on this project's 2-core CPU (AVX512-BF16), SmolLM2-135M, ~260-340-token
    prompts: AttnLRP ~2.5x faster in bf16 than fp32; relevance Pearson 0.999 with fp32
    when the same logit is explained (0.9996 against the fp32 lxt-README baseline in
    ml.benchmarks.relevance). With explain="next"/"max" a near-tie top token may differ
    between dtypes, and then a different logit is explained. Plain grad_input is unstable
    in bf16 (near-zero correlation with fp32): load an fp32 model to study it."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    if device.type == "cpu" and _cpu_has_native_bf16():
        return torch.bfloat16
    return torch.float32


def _cpu_has_native_bf16() -> bool:
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


def encode_pair(tokenizer, note: str, task: str, *, template: PromptTemplate | str | None = None,
                chat: bool | None = None, chat_template_kwargs: dict | None = None,
                max_note_tokens: int | None = None, truncate: str = "right",
                include_target: bool = False) -> EncodedPair:
    """Tokenise one (note, task) prompt and locate the note tokens and the target token.

    A token belongs to the note when its character span overlaps the note's span in the
    prompt; its offsets are clipped to the note (a token straddling the boundary, e.g. a
    whitespace run, keeps only its note part). Special tokens and template text never
    overlap the note, so they are excluded.
    """
    if not isinstance(note, str) or not note.strip():
        raise ValueError("note text is empty")
    if not isinstance(task, str) or not task.strip():
        raise ValueError("task description is empty")
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
        raise ValueError(f"task description {task!r} produced no tokens")
    target = int(in_task[(len(in_task) - 1) // 2])
    in_note = in_note[in_note < target]
    if len(in_note) == 0:
        raise ValueError("note produced no tokens before the task description")
    offsets = np.stack([np.clip(starts[in_note], n0, n1), np.clip(ends[in_note], n0, n1)], axis=1)
    offsets = (offsets - n0 + shift).astype(np.int32)
    end = target + 1 if include_target else target
    return EncodedPair(list(ids[:end]), in_note, offsets, int(ids[target]), truncated)


def compute_relevance(loaded, notes: list[str], task_descriptions: list[str], *, method: str = "attnlrp",
                      template: PromptTemplate | str | None = None, batch_size: int | None = None,
                      normalise: str = "abs", progress: Callable[[int, int], None] | None = None,
                      max_note_tokens: int | None = None, truncate: str = "right",
                      chat: bool | None = None, explain: str = "next") -> list[RelevanceResult]:
    """Relevance of each note's tokens for its task description; one result per pair, in order.

    loaded: an ml.models.LoadedModel. notes and task_descriptions: equal-length lists.
    method "attnlrp" patches this process with lxt (see ml.lrp): it must not train afterwards.
    normalise: "abs" -> |r| / max|r|; "clip" -> max(r, 0) / max(r).
    batch_size: prompts per forward pass (None: 1 on CPU, where batching gains nothing on
    two cores, 16 on CUDA); on CUDA it halves on out-of-memory.
    progress(done, total) is called after each batch.
    explain: "next" (reference code), "max" or "target"; see the module docstring.
    max_note_tokens / truncate: cut longer notes ("right" keeps the start, like the
    reference's text[:max_len]; "left" keeps the end); the task part is never cut.
    None: the model's context (max_position_embeddings) minus TEMPLATE_ROOM tokens.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if normalise not in NORMALISE:
        raise ValueError(f"unknown normalise {normalise!r}; choose one of {', '.join(NORMALISE)}")
    if explain not in EXPLAIN:
        raise ValueError(f"unknown explain {explain!r}; choose one of {', '.join(EXPLAIN)}")
    if len(notes) != len(task_descriptions):
        raise ValueError("notes and task_descriptions must have the same length")
    template = get_template(template)
    tokenizer, model = loaded.tokenizer, loaded.model
    if max_note_tokens is None:
        max_note_tokens = _context_limit(model)
    encoded = [
        encode_pair(tokenizer, note, task, template=template, chat=chat,
                    chat_template_kwargs=loaded.family.chat_template_kwargs,
                    max_note_tokens=max_note_tokens, truncate=truncate, include_target=explain == "next")
        for note, task in zip(notes, task_descriptions)
    ]
    import ml.lrp

    if method == "attnlrp":
        ml.lrp.patch(loaded.family)
    elif method == "grad_input" and ml.lrp.is_patched():
        raise RuntimeError("grad_input needs an unpatched process: lxt's AttnLRP patches are "
                           "applied here, so its gradients would be AttnLRP relevance")
    if batch_size is None:
        batch_size = 16 if model.device.type == "cuda" else 1
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)

    results: list[RelevanceResult | None] = [None] * len(encoded)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].input_ids))
    done = 0
    with _relevance_mode(model, method):
        while done < len(order):
            chunk = order[done: done + batch_size]
            try:
                targets = [encoded[i].target_id for i in chunk] if explain == "target" else None
                rows, predicted = _run_batch(model, [encoded[i].input_ids for i in chunk], pad_id, method, targets)
            except torch.cuda.OutOfMemoryError:
                if batch_size == 1:
                    raise
                batch_size = max(1, batch_size // 2)
                torch.cuda.empty_cache()
                continue
            width = rows.shape[1]
            for row, i, pred in zip(rows, chunk, predicted):
                enc = encoded[i]
                raw = row[width - len(enc.input_ids) + enc.note_index].astype(np.float32)
                results[i] = RelevanceResult(
                    offsets=enc.offsets, raw_scores=raw, scores=normalise_scores(raw, normalise),
                    target_token=tokenizer.decode([enc.target_id]), predicted_token=tokenizer.decode([pred]),
                    truncated=enc.truncated,
                )
            done += len(chunk)
            if progress is not None:
                progress(done, len(order))
    return results


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


def _run_batch(model, batch: list[list[int]], pad_id: int, method: str,
               targets: list[int] | None = None) -> tuple[np.ndarray, list[int]]:
    """-> (relevance per position (B, L) as float32 numpy, top predicted id per prompt).
    targets: token ids whose logits to explain (None: each prompt's largest logit)."""
    width = max(len(ids) for ids in batch)
    device = model.device
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, ids in enumerate(batch):  # left padding: every prompt ends in the last column
        input_ids[row, width - len(ids):] = torch.tensor(ids)
        mask[row, width - len(ids):] = 1
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    input_ids, mask, position_ids = input_ids.to(device), mask.to(device), position_ids.to(device)
    kwargs = {"attention_mask": mask, "position_ids": position_ids, "use_cache": False, "logits_to_keep": 1}

    if method == "attention":
        with torch.no_grad(), _last_row_attention(model) as rows:
            logits = model(input_ids=input_ids, **kwargs).logits[:, -1, :]
        relevance = torch.stack(rows).mean(0)
    else:
        with torch.enable_grad():
            embeds = model.get_input_embeddings()(input_ids).detach().requires_grad_(True)
            logits = model(inputs_embeds=embeds, **kwargs).logits[:, -1, :]
            if targets is None:
                top = logits.max(dim=-1).values
            else:
                top = logits.gather(1, torch.tensor(targets, device=logits.device)[:, None])[:, 0]
            # Prompts are independent, so the gradient of the sum is each prompt's gradient.
            top.sum().backward()
        relevance = (embeds.detach().float() * embeds.grad.float()).sum(-1)
    predicted = logits.argmax(dim=-1).tolist()
    return relevance.float().cpu().numpy(), predicted


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
def _last_row_attention(model):
    """Collect, per decoder layer, the head-averaged attention of the LAST position.

    Eager attention modules return (output, weights (B, H, L, L)); a hook keeps only the
    last query row, so memory stays O(layers x L) instead of O(layers x heads x L^2).
    """
    rows: list[torch.Tensor] = []

    def keep_last_row(_module, _args, output):
        weights = output[1]
        if weights is not None:
            rows.append(weights[:, :, -1, :].float().mean(dim=1))

    handles = [m.register_forward_hook(keep_last_row) for m in _decoder_attention_modules(model)]
    try:
        yield rows
        if not rows:
            raise RuntimeError("no attention weights were captured; is the model using eager attention?")
    finally:
        for h in handles:
            h.remove()


def _decoder_attention_modules(model) -> list[torch.nn.Module]:
    return [m for name, m in model.named_modules()
            if name.endswith("self_attn") and hasattr(m, "layer_idx")]
