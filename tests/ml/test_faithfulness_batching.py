"""ml.faithfulness.ModelScorer: rows scored as batches (the product path, `max_rows` 32) equal the
same rows scored one per forward pass, on tiny random Llama, Qwen2 and Gemma3 models."""

from __future__ import annotations

import numpy as np
import pytest

from ml.faithfulness import ModelScorer, neutral_token_id
from ml.relevance import RelevanceConfig
from tests.ml.conftest import build_loaded

NOTE = "Vital signs: heart rate 130 bpm, tachycardic, blood pressure 110/70 mmHg. He has a pacemaker since 2019."


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma3"])
@pytest.mark.parametrize("explain", ["next", "span"])
def test_batched_rows_equal_one_row_per_forward_pass(family, explain):
    """Tolerance: a batch changes only how the fp32 matmuls are blocked (the rows' summation order
    may differ), each logit by a few units of fp32 rounding of the logits' magnitude; a
    log-probability adds the log-sum-exp, of the same magnitude, and "span" sums one per explained
    token. 64 x eps(fp32) x (1 + max |logit|) x explained tokens bounds that with a wide margin;
    the rows themselves differ by far more (checked), so a row scored in another row's place fails."""
    import torch

    torch.set_num_threads(1)
    loaded = build_loaded(family)
    config = RelevanceConfig(method="grad_input", explain=explain)
    neutral = neutral_token_id(loaded.tokenizer)
    batched = ModelScorer(loaded, NOTE, "heart rate", config, neutral_id=neutral, max_rows=32)
    single = ModelScorer(loaded, NOTE, "heart rate", config, neutral_id=neutral, max_rows=1)
    n = batched.n_tokens
    replace = np.random.default_rng(0).random((40, n)) < 0.3  # two chunks: 32 rows and 8
    replace[0] = False
    a, b = batched(replace), single(replace)
    assert batched.calls == 2 and single.calls == 40
    with torch.no_grad():
        logits = loaded.model(input_ids=torch.tensor([batched.enc.input_ids])).logits[0]
    explained = len(batched.explained or [0])
    tolerance = 64 * float(np.finfo(np.float32).eps) * (1 + float(logits.abs().max())) * explained
    assert np.abs(a - b).max() <= tolerance
    assert np.abs(np.diff(a)).max() > 100 * tolerance  # the rows are told apart


def test_the_rows_a_call_follow_the_memory_a_row_needs():
    """A row's activations grow with its length (and its attention scores with the square): the
    default batch is MAX_ROWS for short prompts, fewer for long ones, never 0."""
    from ml.faithfulness import MAX_ROWS, ROW_MEMORY, rows_for_memory

    loaded = build_loaded("llama")
    config = loaded.model.config
    per_token = 4 * (3 * config.intermediate_size + 4 * config.hidden_size)
    short, long = 64, 4096
    assert rows_for_memory(loaded.model, short) == MAX_ROWS
    expected = ROW_MEMORY // (per_token * long + 4 * config.num_attention_heads * long * long)
    assert rows_for_memory(loaded.model, long) == max(1, min(MAX_ROWS, expected)) < MAX_ROWS
    assert rows_for_memory(loaded.model, 10**6) == 1
    scorer = ModelScorer(loaded, NOTE, "heart rate", RelevanceConfig(), neutral_id=neutral_token_id(loaded.tokenizer))
    assert scorer.max_rows == rows_for_memory(loaded.model, len(scorer.enc.input_ids))


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma3"])
def test_occlusion_over_a_shared_prefix_equals_a_plain_loop(family, monkeypatch):
    """Occlusion's copies run as tails over the prompt's cached prefix (batches of 3 words here, so
    most batches start mid-prompt; Gemma3's sliding window is 8 tokens, shorter than the prompts).
    Tolerance as tests/ml/test_relevance_ig_occlusion.py: the same fp32 arithmetic in another order
    (cached keys and values, another batch shape), each logit within a few units of fp32 rounding
    of the logits' magnitude; a drop is the difference of two: 64 x eps(fp32) x (1 + max |logit|)."""
    import torch

    from ml.relevance.methods import get
    from ml.relevance.methods.occlusion import word_starts
    from tests.ml.test_relevance_ig_occlusion import PROMPTS, explained_logit, run

    torch.set_num_threads(1)
    loaded = build_loaded(family)
    method = get("occlusion")
    monkeypatch.setattr(method, "rows", 3)
    cached = []
    hook = loaded.model.register_forward_hook(
        lambda _m, _a, kwargs, _o: cached.append(kwargs.get("past_key_values") is not None), with_kwargs=True
    )
    try:
        batch, rows = run(loaded, method, PROMPTS, [None, None])
    finally:
        hook.remove()
    assert sum(cached) > 4  # the prefix path ran
    neutral = neutral_token_id(loaded.tokenizer, "pad")
    eps = float(np.finfo(np.float32).eps)
    for ids, row in zip(batch, rows):
        row = row[len(row) - len(ids) :]
        logits, top = explained_logit(loaded, ids)
        starts = word_starts([str(p) for p in loaded.tokenizer.convert_ids_to_tokens(ids[:-1])])
        expected = np.zeros(len(ids))
        words = []
        for i, start in enumerate(starts):
            if start:
                words.append([])
            words[-1].append(i)
        for word in words:
            occluded = [neutral if i in word else t for i, t in enumerate(ids)]
            other, _ = explained_logit(loaded, occluded, top)
            expected[word] = float(logits[top] - other[top])
        assert np.abs(row - expected).max() <= 64 * eps * (1 + float(logits.abs().max()))
        assert np.abs(expected).max() > 1e-3  # the drops are not all 0: a wrong word would show
