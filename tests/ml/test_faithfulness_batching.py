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
