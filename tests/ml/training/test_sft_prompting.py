from dataclasses import replace

import pytest

from ml.training import PromptingConfig, SFTConfig, predict_prompting, predict_sft, self_label, train_sft
from ml.training.prompting import SYSTEM_PROMPTS, draw_shots
from ml.training.scoring import OptionRequest, choose_options, option_scores
from tests.ml.conftest import build_loaded
from tests.ml.training.conftest import labeled_items


def test_sft_predictions_are_always_one_of_the_options():
    loaded, items = build_loaded("llama"), labeled_items()
    predictions = predict_sft(loaded, items, mask_token="<mask>", batch_size=3)
    assert len(predictions) == len(items)
    assert all(p in item.options for p, item in zip(predictions, items))


def test_option_scores_equal_scoring_each_option_alone():
    loaded = build_loaded("qwen2")
    request = OptionRequest("heart rate <mask>?", ["tachycardic", "normal", "not mentioned"])
    together = option_scores(loaded, [request], max_length=128, batch_size=8)[0]
    alone = [option_scores(loaded, [OptionRequest(request.prompt, [o])], max_length=128)[0][0] for o in request.options]
    assert together == pytest.approx(alone, rel=1e-5)
    best = request.options[max(range(3), key=together.__getitem__)]
    assert choose_options(loaded, [request], max_length=128) == [best]


def reference_score(loaded, request, option, max_length):
    """log P(option + end of turn | prompt) from one plain forward of that sequence alone."""
    import torch

    from ml.training.encoding import Encoder

    encoder = Encoder(loaded.tokenizer, max_length, loaded.family.chat_template_kwargs)
    e = encoder.encode(request.prompt, option, system=request.system)[0]
    ids = torch.tensor(e.input_ids, dtype=torch.long)[None]
    with torch.no_grad():
        log_probs = torch.log_softmax(loaded.model(ids).logits[0].float(), -1)
    return sum(log_probs[p - 1, ids[0, p]].item() for p in range(e.prompt_len, ids.size(1)))


def test_grouped_requests_score_as_each_sequence_alone_in_every_family(tiny):
    from tests.ml.training.test_features_heads import LONG_NOTE, TASKS

    requests = [
        OptionRequest(f"{LONG_NOTE} <crf_item> {description}? <mask> <\\crf_item>", options, group="n0")
        for _, description, options in TASKS
    ]
    requests.append(OptionRequest("heart rate <mask>?", ["tachycardic", "normal"]))  # alone: plain batch
    scores = option_scores(tiny, requests, max_length=256, batch_size=2)
    for request, got in zip(requests, scores):
        expected = [reference_score(tiny, request, option, 256) for option in request.options]
        assert got == pytest.approx(expected, rel=1e-4, abs=1e-3)


def test_sft_learns_the_labels_of_a_tiny_training_set(tmp_path):
    # each task's label is its second option: learnable by the 2-layer model in a few steps
    items = [replace(i, label=i.options[1]) for i in labeled_items()]
    loaded = build_loaded("llama")
    before = predict_sft(loaded, items, mask_token="<mask>", max_length=256)
    assert before != [item.label for item in items]
    config = SFTConfig(
        lr=1e-2,
        epochs=4,
        effective_batch_size=4,
        micro_batch_size=4,
        lora_r=8,
        lora_alpha=16,
        warmup_ratio=0.0,
        max_length=256,
        precision="fp32",
    )
    result = train_sft(loaded, items, config, output_dir=tmp_path, mask_token="<mask>")
    assert result.steps == 8 and "cut" not in result.history[0].message
    assert predict_sft(loaded, items, mask_token="<mask>", max_length=256) == [item.label for item in items]


def test_self_label_gives_items_with_predicted_labels():
    loaded = build_loaded("llama")
    unlabeled = [item.with_label(None) for item in labeled_items(2)]
    labeled = self_label(loaded, unlabeled, mask_token="<mask>")
    assert [i.item_id for i in labeled] == [i.item_id for i in unlabeled]
    assert all(i.label in i.options for i in labeled)


def test_zero_shot_gives_one_prediction_list_per_system_prompt():
    loaded, items = build_loaded("gemma3"), labeled_items(2)
    variants = predict_prompting(loaded, items, PromptingConfig(shots=0, max_length=256))
    assert len(variants) == len(SYSTEM_PROMPTS) == 3
    for predictions in variants:
        assert all(p in item.options for p, item in zip(predictions, items))


def test_two_shot_draws_examples_of_the_same_task_reproducibly():
    loaded = build_loaded("llama")
    train, test = labeled_items(4), labeled_items(2)
    config = PromptingConfig(shots=2, seed=0, max_length=512)
    first = draw_shots(loaded.tokenizer, train, config, variant=0, mask_token="<mask>")
    assert first == draw_shots(loaded.tokenizer, list(reversed(train)), config, variant=0, mask_token="<mask>")
    assert set(first) == {"tachy", "pm"} and all(len(shots) == 2 for shots in first.values())
    for task, shots in first.items():
        descriptions = {i.description for i in train if i.task == task}
        assert all(any(f"<crf_item> {d}?" in prompt for d in descriptions) for prompt, _ in shots)
    draws = [draw_shots(loaded.tokenizer, train, config, variant=v, mask_token="<mask>") for v in range(3)]
    assert len({repr(d) for d in draws}) > 1
    variants = predict_prompting(loaded, test, config, train_items=train)
    assert len(variants) == 3
    assert all(p in item.options for predictions in variants for p, item in zip(predictions, test))


def test_few_shot_needs_labeled_training_items():
    with pytest.raises(ValueError, match="train_items"):
        predict_prompting(build_loaded("llama"), labeled_items(1), PromptingConfig(shots=2))
