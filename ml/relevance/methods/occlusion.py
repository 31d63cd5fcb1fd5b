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

Cost per prompt: 1 + (words in the prompt) forward passes, no backward; the occluded copies of a
batch's prompts run as batches of up to ROWS rows.
"""

from __future__ import annotations

from ml.relevance.methods.base import RelevanceMethod
from ml.relevance.methods.integrated_gradients import explained_total, fixed_targets, repeat_kwargs

ROWS = 32
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

        if self.neutral_id is None:
            raise RuntimeError("occlusion: prepare_tokenizer was not called")
        with torch.no_grad():
            logits = model(input_ids=input_ids, **kwargs).logits[:, -targets.keep :, :]
            ids = fixed_targets(targets, logits)
            full = explained_total(targets, ids, logits)
            mask = kwargs["attention_mask"]
            jobs = []  # (prompt row, columns of one word)
            for b in range(len(input_ids)):
                first = int((mask[b] == 0).sum())
                for word in self.words(input_ids[b].tolist(), first, input_ids.shape[1] - targets.keep):
                    jobs.append((b, word))
            relevance = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
            from ml.relevance.methods.integrated_gradients import _select

            for start in range(0, len(jobs), self.rows):
                chunk = jobs[start : start + self.rows]
                rows = [b for b, _ in chunk]
                occluded = input_ids[rows].clone()
                for r, (_, word) in enumerate(chunk):
                    occluded[r, word] = self.neutral_id
                out = model(input_ids=occluded, **repeat_kwargs(kwargs, rows)).logits[:, -targets.keep :, :]
                drop = full[rows] - explained_total(_select(targets, rows), ids[rows], out)
                for r, (b, word) in enumerate(chunk):
                    relevance[b, word] = drop[r].float()
        return relevance, logits


METHOD = Occlusion()
