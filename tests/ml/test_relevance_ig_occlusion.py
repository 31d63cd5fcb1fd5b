"""Integrated Gradients and occlusion (ml.relevance.methods): IG's completeness on a tiny random
model, occlusion equal to a plain one-word-at-a-time loop, both through compute_relevance, and
the passes each costs a prompt, counted by a hook."""

from __future__ import annotations

import numpy as np
import pytest

from ml.faithfulness import neutral_token_id
from ml.relevance import RelevanceConfig, compute_relevance
from ml.relevance import compute as relevance_compute
from ml.relevance.methods import get, names
from ml.relevance.methods.occlusion import word_starts
from tests.ml.conftest import build_loaded

NOTE = "Vital signs: heart rate 130 bpm, tachycardic, blood pressure 110/70 mmHg."
PROMPTS = [NOTE + " Task: heart rate", "He has a pacemaker."]


@pytest.fixture(scope="module", params=["llama", "qwen2", "gemma3"])
def loaded(request):
    import torch

    torch.set_num_threads(1)  # shared cores
    return build_loaded(request.param)


def run(loaded, method, prompts, explained):
    """Relevance of every position of each prompt (left-padded rows), as compute_relevance runs it."""
    tok = loaded.tokenizer
    method.prepare(loaded.family)
    method.prepare_tokenizer(tok)
    batch = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    with relevance_compute._relevance_mode(loaded.model, method):
        rows, _ = relevance_compute._run_batch(loaded.model, batch, pad, method, explained)
    return batch, rows


def explained_logit(loaded, ids, explained=None):
    """F of one prompt the plain way: its top (or given) token's logit at the last position."""
    import torch

    with torch.no_grad():
        logits = loaded.model(input_ids=torch.tensor([ids])).logits[0, -1].double()
    return logits, (int(logits.argmax()) if explained is None else explained)


def test_both_methods_are_registered():
    assert {"integrated_gradients", "occlusion"} <= set(names())
    assert len("integrated_gradients") <= 20  # the jobs' method column


def test_integrated_gradients_attributions_sum_to_the_output_difference(loaded):
    """Completeness: sum_i IG_i = F(x) - F(baseline). Gauss-Legendre's error on this smooth path
    falls fast with the steps (measured on the tiny llama: 2e-1 at 8 nodes, 1e-3 at 32, 1e-6 at
    64), so at 64 nodes what is left is fp32 rounding: each logit of the path's batched passes
    within a few hundred eps of the logits' magnitude, and the 64 x L x H weighted products
    summed in fp32, so 1000 x eps(fp32) x (1 + max |logit|) per prompt, while 8 nodes must miss
    by more (the tolerance is not too loose to see the quadrature)."""
    import torch

    method = get("integrated_gradients")
    errors = {}
    try:
        for steps in (8, 64):
            method.steps = steps
            batch, rows = run(loaded, method, PROMPTS, [None, None])
            neutral = neutral_token_id(loaded.tokenizer, "pad")
            errors[steps] = []
            for ids, row in zip(batch, rows):
                logits, top = explained_logit(loaded, ids)
                base, _ = explained_logit(loaded, [neutral] * len(ids), top)
                scale = 1 + float(logits.abs().max())
                errors[steps].append((abs(row.sum() - float(logits[top] - base[top])), scale))
    finally:
        method.steps = 32
    eps = float(np.finfo(np.float32).eps)
    assert all(err <= 1000 * eps * scale for err, scale in errors[64])
    assert max(err for err, _ in errors[8]) > max(err for err, _ in errors[64])
    assert torch.get_num_threads() == 1


def test_occlusion_equals_a_plain_loop_one_word_at_a_time(loaded):
    """The batched rows against one prompt per pass: the same fp32 arithmetic in another order,
    so each logit within a few units of fp32 rounding of the logits' magnitude; a drop is the
    difference of two: 64 x eps(fp32) x (1 + max |logit|) bounds it with a margin."""
    method = get("occlusion")
    batch, rows = run(loaded, method, PROMPTS, [None, None])
    neutral = neutral_token_id(loaded.tokenizer, "pad")
    eps = float(np.finfo(np.float32).eps)
    counts = []
    for ids, row in zip(batch, rows):
        row = row[len(row) - len(ids) :]
        logits, top = explained_logit(loaded, ids)
        pieces = [str(p) for p in loaded.tokenizer.convert_ids_to_tokens(ids[:-1])]
        starts = word_starts(pieces)
        words, expected = [], np.zeros(len(ids))
        for i, start in enumerate(starts):
            if start:
                words.append([])
            words[-1].append(i)
        for word in words:
            occluded = list(ids)
            for i in word:
                occluded[i] = neutral
            other, _ = explained_logit(loaded, occluded, top)
            expected[word] = float(logits[top] - other[top])
        tolerance = 64 * eps * (1 + float(logits.abs().max()))
        assert np.abs(row - expected).max() <= tolerance
        assert row[-1] == 0  # the explained position is never occluded
        counts.append((len(words), len(ids) - 1))
    assert sum(w for w, _ in counts) < sum(n for _, n in counts)  # some words have several tokens


def test_words_start_at_a_space_marker_or_punctuation():
    assert word_starts(["Vital", "Ġsigns", ":", "Ġheart", "Ġrate", "Ġ130", "Ġb", "pm", ","]) == [
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        False,
        True,
    ]


@pytest.mark.parametrize("name", ["integrated_gradients", "occlusion"])
def test_compute_relevance_gives_note_maps_and_counts_its_passes(name):
    """Forward passes a prompt, counted by a hook: IG 1 + STEPS rows forward (and as many
    backward), occlusion 1 + its words."""
    import torch

    torch.set_num_threads(1)
    tiny = build_loaded("llama")
    rows = []
    hook = tiny.model.register_forward_hook(
        lambda _m, args, kwargs, out: rows.append(len(out.logits)), with_kwargs=True
    )
    try:
        (result,) = compute_relevance(tiny, [NOTE], ["heart rate"], RelevanceConfig(method=name))
    finally:
        hook.remove()
    assert len(result.scores) == len(result.offsets) > 5 and np.isfinite(result.scores).all()
    if name == "integrated_gradients":
        assert sum(rows) == 1 + get(name).steps
    else:
        assert 1 + 5 < sum(rows) < 1 + len(result.offsets) + 40  # note words + template/task words
