"""Occlusion by word: a word's relevance is how much the explained quantity drops when its tokens
are replaced by the neutral token faithfulness uses (ml.relevance.neutral.neutral_token_id "pad"),
positions and length kept; every token of the word gets the word's drop.

A word is a run of tokens whose first starts a word: a token whose text (the tokenizer's own
piece) begins with a space marker ("Ġ", "▁", " "), a newline ("Ċ", "\\n"), or is not a letter or
digit run glued to the previous one (punctuation stands alone). Every word of the prompt is
occluded except the explained positions (the last `keep` columns) and the padding, so the
relevance outside the note (template, task) is measured too and then dropped like every method's.
F is what every method explains (the sum of the explained logits; for "next"/"max" the full
prompt's top token, kept fixed).

Cost per prompt: 1 + (words in the prompt) forward rows, no backward, each copy from its batch's
first occluded column on (below), plus the prompt's columns once for the cache; the copies run
as batches of up to ROWS rows of one prompt. Prefix sharing: a batch of copies occluding consecutive
words first changes the prompt at its first word's column c, so columns before c are the prompt's
own; they run once, into a key/value cache extended from batch to batch (ml.training.prefix's
repeat_cache), and each copy runs only its tail from c. On the CPU, where a batch's rows cost
what they cost alone, batches over a prefix hold PREFIX_ROWS copies (the later a batch starts, the
shorter its tails): on SmolLM2, one E3C prompt of 234 tokens, 141 CPU seconds whole against 80
with batches of 32 over the prefix and 71 with 8 (4: 72; one thread, a shared 2-core machine at
load 10). The drops equal those of whole copies to fp32 rounding (largest difference there
1.9e-5 for drops up to 1.57; tests: a plain one-word-at-a-time loop, Gemma3's sliding window
included).
"""

from __future__ import annotations

from ml.relevance.methods.base import RelevanceMethod
from ml.relevance.methods.integrated_gradients import explained_total, fixed_targets

ROWS = 32
PREFIX_ROWS = 8  # copies a batch over a shared prefix on the CPU (module doc)
_STARTS = ("Ġ", "▁", " ", "Ċ", "\n", "\t", "ĉ")


def word_starts(pieces: list[str]) -> list[bool]:
    """Whether each token starts a word (module doc)."""
    out = []
    for i, piece in enumerate(pieces):
        if i == 0 or not piece or piece.startswith(_STARTS):
            out.append(True)
            continue
        glued = piece[0].isalnum() and pieces[i - 1][-1:].isalnum()
        out.append(not glued)
    return out


class Occlusion(RelevanceMethod):
    name = "occlusion"
    label = "Occlusion (by word)"
    rows = ROWS
    share_prefix = True  # False: every copy runs whole (the plain path, for benchmarks and checks)
    prefix_rows = PREFIX_ROWS

    def __init__(self):
        self.neutral_id: int | None = None
        self.tokenizer = None

    def prepare_tokenizer(self, tokenizer) -> None:
        from ml.relevance.neutral import neutral_token_id

        self.neutral_id = neutral_token_id(tokenizer, "pad")
        self.tokenizer = tokenizer

    def words(self, ids: list[int], start: int, stop: int) -> list[list[int]]:
        """Columns of each word among columns start..stop-1 of a prompt row."""
        pieces = self.tokenizer.convert_ids_to_tokens(ids[start:stop])
        out: list[list[int]] = []
        for column, starts in zip(range(start, stop), word_starts([str(p) for p in pieces])):
            if starts or not out:
                out.append([])
            out[-1].append(column)
        return out

    def batch(self, model, input_ids, kwargs, targets):
        import torch

        from ml.relevance.methods.integrated_gradients import _select

        if self.neutral_id is None:
            raise RuntimeError("occlusion: prepare_tokenizer was not called")
        with torch.no_grad():
            logits = model(input_ids=input_ids, **kwargs).logits[:, -targets.keep :, :]
            ids = fixed_targets(targets, logits)
            full = explained_total(targets, ids, logits)
            mask = kwargs["attention_mask"]
            relevance = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
            for b in range(len(input_ids)):
                first = int((mask[b] == 0).sum())  # left padding
                prompt = input_ids[b : b + 1, first:]
                words = [
                    [c - first for c in word]
                    for word in self.words(input_ids[b].tolist(), first, input_ids.shape[1] - targets.keep)
                ]
                sub, cache = _select(targets, [b]), _PrefixCache(prompt)
                step = self.rows
                if self.share_prefix and input_ids.device.type == "cpu":
                    step = min(step, self.prefix_rows)  # smaller batches start later: shorter tails
                for start in range(0, len(words), step):
                    chunk = words[start : start + step]
                    out = self._tails(model, cache, chunk, targets.keep)
                    drop = full[b] - explained_total(_select(sub, [0] * len(chunk)), ids[[b] * len(chunk)], out)
                    for r, word in enumerate(chunk):
                        relevance[b, [first + c for c in word]] = drop[r].float()
        return relevance, logits

    def _tails(self, model, cache: _PrefixCache, chunk, keep):
        """Logits at the last `keep` positions of the prompt with each word of `chunk` occluded
        (one row each); the columns before the chunk's first word come from the prompt's cache."""
        import torch

        from ml.training.prefix import repeat_cache

        prompt, start = cache.prompt, chunk[0][0]
        rows, length = len(chunk), prompt.shape[1]
        if not self.share_prefix:
            start = 0
        occluded = prompt[:, start:].repeat(rows, 1)
        for r, word in enumerate(chunk):
            occluded[r, [c - start for c in word]] = self.neutral_id
        if start == 0:
            return model(input_ids=occluded, use_cache=False, logits_to_keep=keep).logits[:, -keep:, :]
        cache.extend(model, start)
        return model(
            input_ids=occluded,
            attention_mask=torch.ones((rows, length), dtype=torch.long, device=prompt.device),
            position_ids=torch.arange(start, length, device=prompt.device).expand(rows, -1),
            past_key_values=repeat_cache(cache.cache, rows),
            use_cache=True,
            logits_to_keep=keep,
        ).logits[:, -keep:, :]


class _PrefixCache:
    """One prompt's (1, L) key/value cache of its first `cached` columns, extended on demand."""

    def __init__(self, prompt):
        self.prompt, self.cache, self.cached = prompt, None, 0

    def extend(self, model, stop: int) -> None:
        import torch

        if stop <= self.cached:
            if stop < self.cached:
                raise ValueError("occlusion: the words must come in column order")
            return
        self.cache = model(
            input_ids=self.prompt[:, self.cached : stop],
            position_ids=torch.arange(self.cached, stop, device=self.prompt.device)[None],
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=1,
        ).past_key_values
        self.cached = stop


METHOD = Occlusion()
