"""Attention from the explained positions to each token, averaged over heads and layers (the
paper's comparison). Runs the model with eager attention, the only kind that returns weights;
for "span"/"contrastive" the rows of the explained positions are summed. No gradients, so no
shared prefix either."""

from __future__ import annotations

import contextlib

from ml.relevance.methods.base import RelevanceMethod


class MeanAttention(RelevanceMethod):
    name = "attention"
    label = "Mean attention"
    eager_attention = True

    def batch(self, model, input_ids, kwargs, targets):
        import torch

        with torch.no_grad(), _last_rows_attention(model, targets.keep) as rows:
            logits = model(input_ids=input_ids, **kwargs).logits[:, -targets.keep :, :]
        attention = torch.stack(rows).mean(0)  # (B, keep, L)
        return (attention * targets.chosen[..., None]).sum(1), logits


@contextlib.contextmanager
def _last_rows_attention(model, keep: int = 1):
    """Collect, per decoder layer, the head-averaged attention of the LAST `keep` positions.

    Eager attention modules return (output, weights (B, H, L, L)); a hook keeps only those
    query rows, so memory stays O(layers x keep x L) instead of O(layers x heads x L^2).
    """
    rows = []

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


def _decoder_attention_modules(model) -> list:
    return [m for name, m in model.named_modules() if name.endswith("self_attn") and hasattr(m, "layer_idx")]


METHOD = MeanAttention()
