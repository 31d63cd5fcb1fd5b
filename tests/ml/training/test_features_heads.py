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
    features = extract_features(loaded, items, batch_size=3, max_length=128)
    assert features.shape == (len(items), loaded.model.config.hidden_size) and features.dtype == np.float32
    enc = Encoder(loaded.tokenizer, 128)
    for row, item in enumerate(items):
        e = enc.encode_prompt(feature_prompt(item, "<|fim_pad|>"))
        assert loaded.tokenizer.decode(e.input_ids).endswith("<|im_start|>assistant\n")
        with torch.no_grad():
            out = loaded.model(torch.from_numpy(e.input_ids.astype(np.int64))[None], output_hidden_states=True)
        assert torch.allclose(torch.from_numpy(features[row]), out.hidden_states[-1][0, -1], atol=1e-5)


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
