"""Gradient relevance of prompts that begin alike: their common prefix run forward once.

The relevance prompt puts the note first and s_T last (ml.prompts), so the prompts of one
note (typically 9 sampled tasks, plus a neutral prompt for "contrastive") share every token
up to the task. `run_group` explains such a group with one forward pass of that prefix:

1. the prefix (batch 1) runs forward with gradients on its input embeddings, keeping its
   graph and its key/value cache;
2. the tails (the rest of each prompt: template end and s_T) run as rows of one batch over a
   copy of the cache repeated per row, whose keys and values are DETACHED leaf tensors; one
   backward of the sum of every row's explained logit gives each row its own gradients (rows
   are independent): those of its tail embeddings and those of its copy of the cache;
3. each row's cache gradients are then pulled back through the prefix graph on its own
   (one vector-Jacobian product per row, the graph retained in between).

Why not one backward through a cache shared by the rows: the prefix graph is one, so every
row's gradient would ADD UP in the prefix embeddings, and every task would get the sum of
the group's maps for the note tokens. Step 3 keeps each task's map its own. It is correct
under AttnLRP because lxt's efficient rules are modified gradients, linear in the gradient
that arrives (stop-gradient, divided gradients, saved ratios) and applied per position, and
because the tail's attention reads the prefix's keys and values exactly as a full pass does
(before lxt's division of their gradients, which sits inside the attention function and so
applies alike to cached and fresh keys).

Cost per prompt: prefix forward / group size, plus a tail forward and backward, plus one
prefix backward (gradients of the inputs only: parameters are frozen). A full pass costs a
whole forward and a whole backward, so the sharing saves at most the prefix's forward of
every prompt but one (measured by `python -m benchmarks relevance`).

The batching helpers (common prefix, right-padded tails, repeated cache) are those of the
scoring path's shared prefix, ml.training.prefix. Maps equal those of one full pass per
prompt to float rounding (tests: every supported family, Gemma3's sliding window included).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ml.relevance.targets import ExplainedTargets, input_relevance
from ml.training.prefix import MIN_SHARED_TOKENS, common_prefix_length, repeat_cache, tail_batch

__all__ = ["MIN_SHARED_TOKENS", "group_prefix", "run_group"]


def group_prefix(prompts: Sequence[Sequence[int]], counts: Sequence[int]) -> int:
    """Tokens the prompts may share: their common prefix, leaving each its last counts[i]
    (explained) positions of its own; 0 when that is fewer than MIN_SHARED_TOKENS."""
    if len(prompts) < 2:
        return 0
    shared = common_prefix_length([np.asarray(p) for p in prompts], list(counts))
    return shared if shared >= MIN_SHARED_TOKENS else 0


def run_group(
    model,
    prompts: Sequence[Sequence[int]],
    shared: int,
    pad_id: int,
    explained: Sequence[list[int] | None],
    batch_size: int,
) -> tuple[list[np.ndarray], list[list[int]]]:
    """-> (relevance of every position of each prompt, float32 arrays of len(prompt); the top
    predicted ids at each prompt's explained positions). The prompts share their first
    `shared` tokens (group_prefix), and explained[i] is as for ml.relevance.compute's batches: the
    ids whose logits prompt i explains at its last positions, None for its largest logit.
    Tails run `batch_size` rows at a time over the one prefix."""
    device = model.device
    embed = model.get_input_embeddings()
    with torch.enable_grad():
        prefix = embed(torch.tensor([list(prompts[0][:shared])], device=device)).detach().requires_grad_(True)
        cache = model(inputs_embeds=prefix, use_cache=True, logits_to_keep=1).past_key_values
        # The cache's tensors are outputs of the prefix graph; the tails get detached copies.
        outputs = [t for layer in cache.layers for t in (layer.keys, layer.values)]
        for layer in cache.layers:
            layer.keys, layer.values = layer.keys.detach(), layer.values.detach()

        relevance: list[np.ndarray] = []
        predicted: list[list[int]] = []
        for start in range(0, len(prompts), batch_size):
            rows = range(start, min(start + batch_size, len(prompts)))
            tails = [np.asarray(prompts[i][shared:]) for i in rows]
            targets = ExplainedTargets.of([explained[i] for i in rows], device)
            ids, mask, positions = tail_batch(tails, shared, pad_id)
            # Logits only at the columns some row explains; `pick` lines each row's up at the end
            # (a row explaining fewer than `keep` positions picks unused ones first, clamped to 0).
            ends = [len(t) for t in tails]
            wanted = [[max(end - targets.keep + k, 0) for k in range(targets.keep)] for end in ends]
            columns = sorted({c for row in wanted for c in row})
            at = {c: j for j, c in enumerate(columns)}
            pick = torch.tensor([[at[c] for c in row] for row in wanted], device=device)
            batch_cache = repeat_cache(cache, len(tails))
            leaves = [t.requires_grad_(True) for layer in batch_cache.layers for t in (layer.keys, layer.values)]
            tail = embed(ids.to(device)).detach().requires_grad_(True)
            logits = model(
                inputs_embeds=tail,
                attention_mask=mask.to(device),
                position_ids=positions.to(device),
                past_key_values=batch_cache,
                use_cache=True,
                logits_to_keep=torch.tensor(columns, device=device),
            ).logits
            logits = logits.gather(1, pick[..., None].expand(-1, -1, logits.size(-1)))
            targets.total(logits).backward()
            tail_relevance = input_relevance(tail)
            predicted.extend(targets.predicted(logits))
            # One vector-Jacobian product per row through the prefix graph, batched (vmap).
            grads = torch.autograd.grad(
                outputs,
                prefix,
                [leaf.grad[:, None] for leaf in leaves],
                retain_graph=rows.stop < len(prompts),
                is_grads_batched=True,
            )[0]
            prefix_relevance = (prefix.detach().float() * grads[:, 0].float()).sum(-1)
            for row, end in enumerate(ends):
                relevance.append(torch.cat([prefix_relevance[row], tail_relevance[row, :end]]).cpu().numpy())
    return relevance, predicted
