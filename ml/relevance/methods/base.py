"""What a relevance method is: one object that turns a batch of prompts into per-position
relevance of what each prompt explains.

A method says, besides its computation, what the runner must know about it:
* `patches_process`: it changes this process for good (lxt's AttnLRP rewrites the family's
  modules), so it runs last among methods in one process (`run_order`) and no training follows;
* `needs_unpatched`: its gradients mean something else once such a patch is in place
  (plain gradient x input), so it refuses a patched process;
* `shares_prefix`: a note's prompts may run their common prefix once (ml.relevance.sharing,
  which computes gradient x input through the model's key/value cache: gradient methods only);
* `eager_attention`: it reads attention weights, which only eager attention returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where it is used: configurations and keys need no torch
    import torch

    from ml.relevance.targets import ExplainedTargets


class RelevanceMethod:
    name: str = ""
    label: str = ""
    patches_process: bool = False
    needs_unpatched: bool = False
    shares_prefix: bool = False
    eager_attention: bool = False

    def prepare(self, family) -> None:
        """Called once per computation, before any batch (family: ml.models' family of the model)."""

    def prepare_tokenizer(self, tokenizer) -> None:
        """Called once per computation with the model's tokenizer (a method that needs a token
        of its own, e.g. a neutral baseline, takes it here)."""

    def batch(
        self, model, input_ids: torch.Tensor, kwargs: dict, targets: ExplainedTargets
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """-> (relevance per position (B, L), logits (B, targets.keep, vocab)) of left-padded
        prompts whose explained positions are their last `targets.keep` columns; `kwargs` are the
        model's keyword arguments (attention mask, position ids, logits_to_keep)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<relevance method {self.name}>"


class GradientMethod(RelevanceMethod):
    """Input embedding x its gradient, summed over the hidden dimension: plain gradients, or the
    modified gradients of whatever rules `prepare` put in place."""

    shares_prefix = True

    def batch(self, model, input_ids, kwargs, targets):
        import torch

        from ml.relevance.targets import input_relevance

        with torch.enable_grad():
            embeds = model.get_input_embeddings()(input_ids).detach().requires_grad_(True)
            logits = model(inputs_embeds=embeds, **kwargs).logits[:, -targets.keep :, :]
            # Prompts are independent, so the gradient of the sum is each prompt's gradient.
            targets.total(logits).backward()
        return input_relevance(embeds), logits
