"""What a batch of prompts explains (ExplainedTargets) and the gradient x input product: shared
by every gradient method and by the shared-prefix runner (ml.relevance.sharing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


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
