"""Integrated Gradients (Sundararajan et al., 2017) on the input embeddings.

Baseline: the embedding of the neutral token faithfulness replaces tokens with (the tokenizer's
pad token, else eos, else unk: ml.relevance.neutral.neutral_token_id "pad") at EVERY position of the
prompt, template and task included; left padding keeps its own embedding, so it contributes 0.
Path: x(a) = baseline + a (x - baseline); relevance of position i = sum over the hidden dimension
of (x_i - baseline_i) x the path integral of dF/dx_i, the integral by Gauss-Legendre quadrature
with STEPS nodes on [0, 1] (Captum's default rule). F is what every method explains (the sum of
the explained logits); for "next"/"max" the explained token is the full prompt's top logit, kept
fixed along the path. Completeness: the attributions of a prompt sum to F(x) - F(baseline) up to
the quadrature error, which falls with STEPS (tests check it).

Cost per prompt: 1 forward pass (the full prompt: its logits and explained token) + STEPS forward
and STEPS backward passes; the STEPS points of a batch's prompts run as batches of up to
ROWS rows. Plain torch, not Captum: Captum's LayerIntegratedGradients would serve the embedding
layer without copying weights, but pulls matplotlib into the image and batches one prompt's steps
only, where this runs the steps of several left-padded prompts at once.
"""

from __future__ import annotations

from ml.relevance.methods.base import RelevanceMethod

STEPS = 32  # Gauss-Legendre nodes on the path
ROWS = 32  # interpolated prompts per forward/backward pass


def fixed_targets(targets, logits):
    """The explained ids of each prompt, decided on the full prompt's logits (B, keep, vocab)."""
    import torch

    return torch.where(targets.by_top[:, None], logits.detach().argmax(dim=-1), targets.target)


def explained_total(targets, ids, logits):
    """Per prompt: the sum of its explained logits at fixed `ids` -> (B,)."""
    import torch

    explained = logits.gather(2, ids[..., None])[..., 0]
    return torch.where(targets.chosen, explained, torch.zeros_like(explained)).sum(1)


def gauss_legendre(steps: int):
    """Nodes and weights of Gauss-Legendre quadrature on [0, 1]."""
    import numpy as np

    nodes, weights = np.polynomial.legendre.leggauss(steps)
    return (nodes + 1) / 2, weights / 2


def repeat_kwargs(kwargs: dict, rows: list[int]) -> dict:
    """The model's keyword arguments for the prompts `rows` (a prompt may come several times)."""
    import torch

    index = torch.as_tensor(rows, device=kwargs["attention_mask"].device)
    out = dict(kwargs)
    for name in ("attention_mask", "position_ids"):
        out[name] = kwargs[name][index]
    return out


class IntegratedGradients(RelevanceMethod):
    name = "integrated_gradients"
    label = "Integrated Gradients"
    needs_unpatched = True  # AttnLRP's patches would change its gradients
    steps = STEPS
    rows = ROWS

    def __init__(self):
        self.neutral_id: int | None = None

    def prepare(self, family) -> None:
        import ml.lrp

        if ml.lrp.is_patched():
            raise RuntimeError(
                "integrated_gradients needs an unpatched process: lxt's AttnLRP patches are applied here"
            )

    def prepare_tokenizer(self, tokenizer) -> None:
        from ml.relevance.neutral import neutral_token_id

        self.neutral_id = neutral_token_id(tokenizer, "pad")

    def batch(self, model, input_ids, kwargs, targets):
        import torch

        if self.neutral_id is None:
            raise RuntimeError("integrated_gradients: prepare_tokenizer was not called")
        embedding = model.get_input_embeddings()
        with torch.no_grad():
            x = embedding(input_ids)
            logits = model(inputs_embeds=x, **kwargs).logits[:, -targets.keep :, :]
            base = embedding(torch.full_like(input_ids, self.neutral_id))
            base = torch.where(kwargs["attention_mask"][..., None].bool(), base, x)  # padding: no path
        ids = fixed_targets(targets, logits)
        delta = x - base
        nodes, weights = gauss_legendre(self.steps)
        points = [(b, a, w) for b in range(len(input_ids)) for a, w in zip(nodes, weights)]
        integral = torch.zeros_like(x, dtype=torch.float32)
        with torch.enable_grad():
            for start in range(0, len(points), self.rows):
                chunk = points[start : start + self.rows]
                rows = [b for b, _, _ in chunk]
                alphas = torch.tensor([a for _, a, _ in chunk], dtype=x.dtype, device=x.device)[:, None, None]
                path = (base[rows] + alphas * delta[rows]).detach().requires_grad_(True)
                out = model(inputs_embeds=path, **repeat_kwargs(kwargs, rows)).logits[:, -targets.keep :, :]
                sub = _select(targets, rows)
                explained_total(sub, ids[rows], out).sum().backward()
                w = torch.tensor([w for _, _, w in chunk], dtype=torch.float32, device=x.device)[:, None, None]
                integral.index_add_(0, torch.as_tensor(rows, device=x.device), path.grad.float() * w)
        return (delta.float() * integral).sum(-1), logits


def _select(targets, rows):
    """ExplainedTargets restricted (and repeated) to `rows`."""
    from dataclasses import replace

    import torch

    index = torch.as_tensor(rows, device=targets.chosen.device)
    return replace(
        targets,
        counts=[targets.counts[r] for r in rows],
        chosen=targets.chosen[index],
        target=targets.target[index],
        by_top=targets.by_top[index],
    )


METHOD = IntegratedGradients()
