"""ml.relevance.sharing: a note's prompts share their prefix's forward pass, and every map
stays the one a full pass of its own prompt gives (to float rounding), in every family.

AttnLRP runs only in the spawned `patched_child`; grad_input runs here (it patches nothing)."""

from __future__ import annotations

import numpy as np
import pytest

from ml.relevance import compute_relevance, shares_prefix_by_default
from tests.ml.conftest import build_loaded

LONG_NOTE = (
    "Patient is a 67-year-old man admitted for community acquired pneumonia. Vital signs: heart rate "
    "130 bpm, tachycardic, blood pressure 110/70 mmHg. He has a pacemaker since 2019 and takes amlodipine "
    "for hypertension."
)
OTHER_NOTE = (
    "Chest X-ray shows right lower lobe consolidation; started on ceftriaxone. The patient denies chest "
    "pain. Temperature 38.5 C, oxygen saturation 91%."
)
SHORT_NOTE = "He takes amlodipine."  # too short a prefix to share: runs alone
TASKS = ["heart rate", "presence of pacemaker", "body temperature", "clinical finding"]
# Note-major like a relevance chunk, plus a short note and one note split around it.
PAIRS = (
    [(LONG_NOTE, t) for t in TASKS[:3]]
    + [(SHORT_NOTE, "hypertension"), (SHORT_NOTE, "heart rate")]
    + [(OTHER_NOTE, t) for t in TASKS]
    + [(LONG_NOTE, TASKS[3])]
)
EXPLAIN = ["next", "max", "target", "span", "contrastive"]


def embedded_tokens(loaded):
    """A counter of the tokens the model embeds (every forward pass of ml.relevance embeds its
    input first): a list that grows by each call's token count."""
    counts = []
    loaded.model.get_input_embeddings().register_forward_hook(lambda _m, args, _o: counts.append(args[0].numel()))
    return counts


def shared_and_full(loaded, method, explain, batch_size=None):
    notes, tasks = [n for n, _ in PAIRS], [t for _, t in PAIRS]
    tokens = embedded_tokens(loaded)
    shared = compute_relevance(
        loaded, notes, tasks, method=method, explain=explain, batch_size=batch_size, share_prefix=True
    )
    shared_tokens = sum(tokens)
    tokens.clear()
    full = compute_relevance(loaded, notes, tasks, method=method, explain=explain, batch_size=1, share_prefix=False)
    return (
        [(r.raw_scores, r.offsets, r.target_token, r.predicted_token) for r in shared],
        [(r.raw_scores, r.offsets, r.target_token, r.predicted_token) for r in full],
        shared_tokens,
        sum(tokens),
    )


# fp32 maps of the shared and the full path agree to the rounding of reordered sums. A score
# is a sum over hidden units and layers of terms as large as the map's largest score, and the
# two paths cut the matmuls differently (and AVX2, AVX-512 or plain kernels block their
# reductions differently), so the error scales with the map's magnitude, not with each score:
# a contrastive map (the difference of two logits' relevance) cancels down to small scores
# carrying the absolute error of the large ones. Plain kernels (ATEN_CPU_CAPABILITY=default)
# measured up to ~100 eps of the map's largest score; we allow 2^10 eps (1.2e-4) of it.
MAP_TOLERANCE = 2**10 * float(np.finfo(np.float32).eps)


def assert_same_maps(shared, full):
    assert len(shared) == len(full) == len(PAIRS)
    for (s, s_offsets, s_target, s_predicted), (f, f_offsets, f_target, f_predicted) in zip(shared, full, strict=True):
        np.testing.assert_array_equal(s_offsets, f_offsets)
        assert (s_target, s_predicted) == (f_target, f_predicted)
        assert np.abs(f).max() > 0
        np.testing.assert_allclose(s, f, rtol=MAP_TOLERANCE, atol=MAP_TOLERANCE * float(np.abs(f).max()))


def child_shared_and_full(family, explain, batch_size=None):
    return shared_and_full(build_loaded(family), "attnlrp", explain, batch_size)


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3", "gemma3"])
def test_attnlrp_maps_over_a_shared_prefix_equal_a_full_pass_per_prompt(family, patched_child):
    for explain in EXPLAIN:
        shared, full, shared_tokens, full_tokens = patched_child.apply(child_shared_and_full, (family, explain))
        assert_same_maps(shared, full)
        assert shared_tokens < 0.6 * full_tokens, explain  # the two long notes' prefixes ran once each


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_tails_in_several_batches_over_one_prefix_keep_each_prompts_map(family, patched_child):
    # batch_size=2: a note's 3-4 tails take two passes over its prefix, whose graph is kept between them
    shared, full, _, _ = patched_child.apply(child_shared_and_full, (family, "next", 2))
    assert_same_maps(shared, full)


@pytest.mark.parametrize("explain", ["next", "span", "contrastive"])
def test_grad_input_maps_over_a_shared_prefix_equal_a_full_pass_per_prompt(tiny, explain):
    shared, full, shared_tokens, full_tokens = shared_and_full(tiny, "grad_input", explain)
    assert_same_maps(shared, full)
    assert shared_tokens < 0.6 * full_tokens


def test_each_task_gets_its_own_map_of_the_shared_note_tokens(tiny_llama):
    # The prefix's backward is one per task: summing the tasks' gradients there would give them all one map.
    results = compute_relevance(
        tiny_llama, [LONG_NOTE] * 3, TASKS[:3], method="grad_input", explain="target", share_prefix=True
    )
    for a, b in [(0, 1), (0, 2), (1, 2)]:
        assert not np.allclose(results[a].raw_scores, results[b].raw_scores, rtol=1e-3)


def test_sharing_is_the_default_on_the_cpu_and_can_be_turned_off(tiny_llama):
    tokens = embedded_tokens(tiny_llama)
    compute_relevance(tiny_llama, [LONG_NOTE] * 4, TASKS, method="grad_input")
    by_default = sum(tokens)
    tokens.clear()
    compute_relevance(tiny_llama, [LONG_NOTE] * 4, TASKS, method="grad_input", share_prefix=False)
    assert by_default < 0.5 * sum(tokens)


@pytest.mark.parametrize("device, shares", [("cpu", True), ("cuda", False), ("cuda:1", False)])
def test_the_default_shares_on_the_cpu_only(device, shares):
    # Measured: ~2x the prompts/s on 2 CPU cores, 0.24-0.39x on one H200 (gpu-check-h200.json).
    assert shares_prefix_by_default(device) is shares


def test_attention_never_shares(tiny_llama):
    tokens = embedded_tokens(tiny_llama)
    compute_relevance(tiny_llama, [LONG_NOTE] * 4, TASKS, method="attention", share_prefix=True)
    asked = sum(tokens)
    tokens.clear()
    compute_relevance(tiny_llama, [LONG_NOTE] * 4, TASKS, method="attention", share_prefix=False)
    assert asked == sum(tokens) > 0


def test_a_group_out_of_memory_is_retried_with_half_the_rows(tiny_llama, monkeypatch):
    import torch

    import ml.relevance.sharing as sharing

    real, asked = sharing.run_group, []

    def limited(model, prompts, shared, pad_id, explained, rows):
        asked.append(rows)
        if rows > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(model, prompts, shared, pad_id, explained, rows)

    monkeypatch.setattr(sharing, "run_group", limited)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    capped = compute_relevance(tiny_llama, [LONG_NOTE] * 4, TASKS, method="grad_input", batch_size=8)
    assert asked == [8, 4, 2]
    full = compute_relevance(tiny_llama, [LONG_NOTE] * 4, TASKS, method="grad_input", share_prefix=False)
    for c, f in zip(capped, full):
        np.testing.assert_allclose(c.raw_scores, f.raw_scores, rtol=1e-4, atol=1e-5 * float(np.abs(f.raw_scores).max()))


def test_progress_counts_every_prompt_once(tiny_llama):
    calls = []
    notes, tasks = [n for n, _ in PAIRS], [t for _, t in PAIRS]
    compute_relevance(
        tiny_llama,
        notes,
        tasks,
        method="grad_input",
        share_prefix=True,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls[-1] == (len(PAIRS), len(PAIRS))
    assert [d for d, _ in calls] == sorted({d for d, _ in calls})  # strictly increasing


# ---- the real SmolLM2 model (slow) ----


def child_real_shared_and_full(model_dir):
    from ml.models import DEFAULT_MODEL, load_model
    from ml.relevance import compute_relevance

    loaded = load_model(DEFAULT_MODEL, model_dir=model_dir, dtype="float32")
    notes, tasks = [LONG_NOTE] * 3, TASKS[:3]
    tokens = embedded_tokens(loaded)
    shared = compute_relevance(loaded, notes, tasks, method="attnlrp", share_prefix=True)
    shared_tokens = sum(tokens)
    tokens.clear()
    full = compute_relevance(loaded, notes, tasks, method="attnlrp", share_prefix=False)
    return (
        [(r.raw_scores, r.predicted_token) for r in shared],
        [(r.raw_scores, r.predicted_token) for r in full],
        shared_tokens,
        sum(tokens),
    )


@pytest.mark.slow
def test_real_model_maps_over_a_shared_prefix_equal_a_full_pass(smollm2_dir, patched_child):
    """fp32 throughout. The shared path runs the note once and each task's suffix over its
    cached keys and values: the same arithmetic cut into other matmul shapes, so sums are
    reordered across 30 layers of AttnLRP's backward pass, each adding rounding of a few eps
    (1.2e-7) that depth compounds: rtol 1e-3 on large scores. Scores near zero are compared
    against the map's own scale (atol 1e-4 x its largest score), since relative error means
    nothing there."""
    shared, full, shared_tokens, full_tokens = patched_child.apply(child_real_shared_and_full, (smollm2_dir,))
    assert shared_tokens < 0.5 * full_tokens
    assert len(shared) == len(full) == 3
    for (s, s_predicted), (f, f_predicted) in zip(shared, full, strict=True):
        assert s_predicted == f_predicted
        assert s.shape == f.shape and len(f) > 10 and np.abs(f).max() > 0
        np.testing.assert_allclose(s, f, rtol=1e-3, atol=1e-4 * float(np.abs(f).max()))
