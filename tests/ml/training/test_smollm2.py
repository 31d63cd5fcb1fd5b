"""A few checks on the real SmolLM2-135M-Instruct (marked slow: `make test` runs them, `make test-fast`
skips them)."""

import pytest

from ml.models import DEFAULT_MODEL, load_model
from ml.training import LabeledItem, SFTConfig, mask_token_for, predict_sft, train_sft
from ml.training.encoding import Encoder

pytestmark = pytest.mark.slow


def test_smollm2_answer_tokens_follow_its_chat_template(smollm2):
    tok = smollm2.tokenizer
    assert mask_token_for(smollm2) == "<empty_output>"
    prompt = "Fill in the masked word in the following sentence. Heart rate <empty_output> bpm, tachycardic."
    [e] = Encoder(tok, 512).encode(prompt, "130")
    assert tok.decode(e.input_ids[: e.prompt_len]).startswith("<|im_start|>system\nYou are a helpful AI assistant")
    assert tok.decode(e.input_ids[: e.prompt_len]).endswith("tachycardic.<|im_end|>\n<|im_start|>assistant\n")
    assert tok.decode(e.input_ids[e.prompt_len :]) == "130<|im_end|>\n"
    assert e.input_ids.tolist().count(tok.convert_tokens_to_ids("<empty_output>")) == 1


def test_one_lora_sft_step_on_smollm2_and_constrained_predictions(smollm2_dir, tmp_path):
    smollm2 = load_model(DEFAULT_MODEL, model_dir=smollm2_dir, dtype="float32")  # trained in place: not the shared one
    mask = mask_token_for(smollm2)
    items = [
        LabeledItem(
            str(i),
            str(i),
            "tachy",
            "heart rate",
            ["tachycardic", "normal heart rate"],
            f"Heart rate {hr} bpm at rest.",
            label,
        )
        for i, (hr, label) in enumerate([(130, "tachycardic"), (72, "normal heart rate")])
    ]
    config = SFTConfig(effective_batch_size=2, micro_batch_size=2, lora_r=4, lora_alpha=8, max_length=128)
    result = train_sft(smollm2, items, config, output_dir=tmp_path, mask_token=mask)
    assert result.steps == 1 and (tmp_path / "final" / "model.safetensors").is_file()
    assert set(predict_sft(smollm2, items, mask_token=mask)) <= {"tachycardic", "normal heart rate"}
