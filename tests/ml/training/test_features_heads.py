import numpy as np
import pytest
import torch

from ml.training import HeadBundle, HeadConfig, LabeledItem, extract_features, train_heads
from ml.training.encoding import Encoder
from ml.training.features import feature_prompt
from tests.ml.conftest import build_loaded
from tests.ml.training.conftest import labeled_items


def count_forward(model):
    calls = []
    original = model.forward

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    model.forward = counted
    return calls


def test_features_are_the_last_prompt_token_state_of_each_item_alone():
    loaded, items = build_loaded("qwen3"), labeled_items(2)
    features = extract_features(loaded, items, batch_size=3, max_length=512)  # nothing cut
    assert features.shape == (len(items), loaded.model.config.hidden_size) and features.dtype == np.float32
    enc = Encoder(loaded.tokenizer, 512)
    for row, item in enumerate(items):
        e = enc.encode_prompt(feature_prompt(item, "<|fim_pad|>"))
        assert loaded.tokenizer.decode(e.input_ids).endswith("<|im_start|>assistant\n")
        with torch.no_grad():
            out = loaded.model(torch.from_numpy(e.input_ids.astype(np.int64))[None], output_hidden_states=True)
        assert torch.allclose(torch.from_numpy(features[row]), out.hidden_states[-1][0, -1], atol=1e-5)


LONG_NOTE = (
    "Patient is a 67-year-old man admitted for community acquired pneumonia. Vital signs: heart rate "
    "130 bpm, tachycardic, blood pressure 110/70 mmHg. He has a pacemaker since 2019."
)
TASKS = [
    ("hr", "heart rate", ["tachycardic", "normal"]),
    ("pm", "presence of pacemaker", ["yes", "no"]),
    ("temp", "body temperature", ["fever", "normal", "not mentioned"]),
]


def note_items(notes=(LONG_NOTE,)):
    """Every task of TASKS on each note: the items of a note share the note's prefix."""
    return [
        LabeledItem(
            item_id=f"{n}-{slug}",
            note_id=f"n{n}",
            task=slug,
            description=description,
            options=options,
            text=text,
            label=options[0],
        )
        for n, text in enumerate(notes)
        for slug, description, options in TASKS
    ]


def count_tokens(model):
    """Tokens the model is run on (input_ids elements), call by call."""
    seen = []
    original = model.forward

    def counted(*args, **kwargs):
        seen.append(kwargs["input_ids"].numel())
        return original(*args, **kwargs)

    model.forward = counted
    return seen


def test_shared_prefix_states_equal_a_full_forward_of_each_item_in_every_family(tiny):
    items = note_items((LONG_NOTE, NOTES_SHORT)) + labeled_items(1)
    plain = extract_features(tiny, items, batch_size=2, max_length=256, shared_prefix=False)
    tokens = count_tokens(tiny.model)
    shared = extract_features(tiny, items, batch_size=2, max_length=256)
    np.testing.assert_allclose(shared, plain, atol=2e-5, rtol=1e-4)
    assert sum(tokens) < 0.7 * sum(len(e) for e in _prompts(tiny, items, 256))  # the note ran once, not per task


def test_a_note_too_long_is_cut_once_for_all_its_tasks():
    from dataclasses import replace

    from ml.training.data import sft_prompt_parts

    loaded, long_note = build_loaded("llama"), " ".join([LONG_NOTE] * 4)
    items = note_items((long_note,))
    tokens = count_tokens(loaded.model)
    shared = extract_features(loaded, items, batch_size=8, max_length=128)
    assert len(tokens) == 2 and tokens[0] >= 32  # the prefix once, then one batch of tails
    # Oracle: every item asked on the shortest window any item of the note was cut to.
    enc, windows = Encoder(loaded.tokenizer, 128), []
    for item in items:
        before, after = sft_prompt_parts(item, "<|fim_pad|>")
        user = enc.fit(before + item.text + after, "")[0]
        windows.append(user[len(before) : len(user) - len(after)])
    window = min(windows, key=len)
    assert len(set(windows)) > 1 and long_note.endswith(window)  # cut per item, the windows would differ
    plain = extract_features(loaded, [replace(i, text=window) for i in items], max_length=128, shared_prefix=False)
    np.testing.assert_allclose(shared, plain, atol=2e-5, rtol=1e-4)


def test_one_item_a_note_goes_through_plain_batches():
    loaded = build_loaded("llama")
    tachy_n0, _, _, pacemaker_n1 = labeled_items(2)  # two notes, one item each: nothing to share
    items = [tachy_n0, pacemaker_n1]
    tokens = count_tokens(loaded.model)
    extract_features(loaded, items, batch_size=8, max_length=128)
    assert len(tokens) == 1  # one left-padded batch, no prefix pass


def test_progress_is_reported_and_a_stop_request_cancels_without_caching(tmp_path):
    from ml.training import TrainingCancelled

    loaded, items = build_loaded("llama"), note_items((LONG_NOTE, NOTES_SHORT))
    progress = []
    extract_features(loaded, items, batch_size=2, max_length=256, on_progress=lambda d, t: progress.append((d, t)))
    assert progress[-1] == (len(items), len(items)) and [d for d, _ in progress] == sorted(d for d, _ in progress)
    asked = []
    with pytest.raises(TrainingCancelled):
        extract_features(
            loaded,
            items,
            cache_dir=tmp_path,
            batch_size=2,
            max_length=256,
            should_stop=lambda: asked.append(1) or len(asked) > 2,
        )
    assert not list(tmp_path.glob("features-*.npy"))


def test_common_prefix_length_leaves_every_sequence_a_token_of_its_own():
    from ml.training.prefix import common_prefix_length

    a, b = np.array([1, 2, 3, 4, 5]), np.array([1, 2, 3, 9])
    assert common_prefix_length([a, b]) == 3
    assert common_prefix_length([a, a.copy()]) == 4  # identical prompts: the last token is still computed
    assert common_prefix_length([a, np.array([7, 2])]) == 0
    assert common_prefix_length([a, b], [3, 1]) == 2  # a keeps its last 3 tokens


def _prompts(loaded, items, max_length):
    enc = Encoder(loaded.tokenizer, max_length)
    return [enc.encode_prompt(feature_prompt(item, "<mask>")).input_ids for item in items]


NOTES_SHORT = (
    "The patient denies chest pain. Temperature 38.5 C, oxygen saturation 91%. Chest X-ray shows consolidation."
)


def test_a_second_call_reads_the_cache_without_running_the_model(tmp_path):
    loaded, items = build_loaded("llama"), labeled_items(2)
    first = extract_features(loaded, items, cache_dir=tmp_path, max_length=128)
    calls = count_forward(loaded.model)
    second = extract_features(loaded, items, cache_dir=tmp_path, max_length=128)
    assert calls == [] and np.array_equal(first, second)
    assert len(list(tmp_path.glob("features-*.npy"))) == 1
    extract_features(loaded, items[:2], cache_dir=tmp_path, max_length=128)  # other items: another key
    assert calls and len(list(tmp_path.glob("features-*.npy"))) == 2


def test_changed_weights_change_the_cache_key(tmp_path):
    loaded, items = build_loaded("llama"), labeled_items(1)
    extract_features(loaded, items, cache_dir=tmp_path, max_length=128)
    with torch.no_grad():
        loaded.model.lm_head.weight[0, 0] += 1.0
    extract_features(loaded, items, cache_dir=tmp_path, max_length=128)
    assert len(list(tmp_path.glob("features-*.npy"))) == 2


def toy(n_per_class=12, dim=16, seed=0):
    """Two tasks with Gaussian clusters per option: linearly separable."""
    rng = np.random.default_rng(seed)
    tasks = {"a": ["yes", "no"], "b": ["low", "normal", "high"]}
    items, rows = [], []
    for task, options in tasks.items():
        centres = rng.normal(0, 3, size=(len(options), dim))
        for c, option in enumerate(options):
            for i in range(n_per_class):
                items.append(LabeledItem(f"{task}-{option}-{i}", f"n{i}", task, task, options, "note", option))
                rows.append(centres[c] + rng.normal(0, 0.3, dim))
    return np.asarray(rows, dtype=np.float32), items


def test_heads_fit_a_separable_toy_set():
    features, items = toy()
    events = []
    bundle = train_heads(features, items, HeadConfig(epochs=20), on_progress=events.append)
    assert bundle.predict(features, items) == [i.label for i in items]
    assert sorted(bundle.heads) == ["a", "b"] and len(events) == 2 * 20
    head = bundle.heads["b"]
    assert [type(m).__name__ for m in head] == ["Linear", "ReLU", "Dropout", "Linear"]
    assert head[0].out_features == 256 and head[2].p == 0.1 and head[3].out_features == 3


def test_heads_are_deterministic_with_the_seed_and_survive_save_and_load(tmp_path):
    features, items = toy()
    torch.manual_seed(123)
    one = train_heads(features, items, HeadConfig(epochs=2, seed=5))
    torch.manual_seed(456)
    two = train_heads(features, items, HeadConfig(epochs=2, seed=5))
    for task in one.heads:
        for a, b in zip(one.heads[task].parameters(), two.heads[task].parameters()):
            assert torch.equal(a, b)
    loaded = HeadBundle.load(one.save(tmp_path / "heads"))
    noisy = features + np.random.default_rng(1).normal(0, 2, features.shape).astype(np.float32)
    assert loaded.predict(noisy, items) == one.predict(noisy, items)
    assert loaded.options == one.options and loaded.config == one.config


def test_predicting_a_task_without_a_head_is_an_error():
    features, items = toy()
    assert {i.task for i in items[:24]} == {"a"}
    bundle = train_heads(features[:24], items[:24], HeadConfig(epochs=1))
    with pytest.raises(ValueError, match="no head"):
        bundle.predict(features, items)
