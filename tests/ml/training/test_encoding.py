import pytest
import torch

from ml.training.batching import IGNORE_INDEX, collate, loss_sum, step_plan
from ml.training.encoding import Encoder
from tests.ml.conftest import build_loaded, build_tokenizer

PROMPT = "Fill in the masked word in the following sentence. Vital signs: heart rate <mask> bpm"


def test_chat_answer_tokens_start_right_after_the_generation_prompt():
    tok = build_tokenizer("chatml")
    [e] = Encoder(tok, 256).encode(PROMPT, "130")
    user = [{"role": "user", "content": PROMPT}]
    generation_prompt = tok.apply_chat_template(user, tokenize=False, add_generation_prompt=True)
    assert e.input_ids[: e.prompt_len].tolist() == tok(generation_prompt, add_special_tokens=False)["input_ids"]
    assert tok.decode(e.input_ids[: e.prompt_len]).endswith(f"{PROMPT}<|im_end|>\n<|im_start|>assistant\n")
    assert tok.decode(e.input_ids[e.prompt_len :]) == "130<|im_end|>\n"


def test_gemma_style_template_answer_is_the_model_turn():
    tok = build_tokenizer("gemma")
    [e] = Encoder(tok, 256).encode("heart rate <mask> bpm", "130")
    assert tok.decode(e.input_ids[: e.prompt_len]).endswith("<start_of_turn>model\n")
    assert tok.decode(e.input_ids[e.prompt_len :]) == "130<end_of_turn>\n"


def test_without_a_chat_template_it_is_prompt_newline_answer_eos():
    tok = build_tokenizer("plain")
    [e] = Encoder(tok, 256).encode("heart rate <mask> bpm", "130")
    assert tok.decode(e.input_ids[: e.prompt_len]) == "<|im_start|>heart rate <mask> bpm\n"
    assert tok.decode(e.input_ids[e.prompt_len :]) == "130<|im_end|>"


def test_labels_are_the_answer_only():
    tok = build_tokenizer("chatml")
    enc = Encoder(tok, 256)
    short, long = enc.encode("heart rate?", "130")[0], enc.encode(PROMPT, "130 bpm")[0]
    batch = collate([short, long], pad_id=tok.pad_token_id)
    for row, e in enumerate([short, long]):
        labels, ids = batch["labels"][row], batch["input_ids"][row]
        supervised = labels != IGNORE_INDEX
        assert int(supervised.sum()) == len(e.input_ids) - e.prompt_len
        assert tok.decode(ids[supervised]) in ("130<|im_end|>\n", "130 bpm<|im_end|>\n")
        assert (labels[supervised] == ids[supervised]).all()
    pad = batch["attention_mask"] == 0
    assert pad.any() and (batch["labels"][pad] == IGNORE_INDEX).all()


def test_the_prompt_is_cut_from_the_left_and_never_the_answer():
    tok = build_tokenizer("chatml")
    note = " ".join(["Patient is a 67-year-old man admitted for community acquired pneumonia."] * 20)
    prompt = f"Fill in the masked word in the following sentence. {note} Vital signs: heart rate <mask> bpm"
    [e] = Encoder(tok, 96).encode(prompt, "130 tachycardic")
    text = tok.decode(e.input_ids)
    assert e.truncated and len(e.input_ids) <= 96
    assert "user\nFill in the masked word in the following sentence. " in text  # the instruction stays
    assert "heart rate <mask> bpm<|im_end|>" in text  # the end of the note stays
    assert tok.decode(e.input_ids[e.prompt_len :]) == "130 tachycardic<|im_end|>\n"


def test_an_example_whose_answer_alone_does_not_fit_is_dropped():
    tok = build_tokenizer("chatml")
    assert Encoder(tok, 24).encode("heart rate?", "tachycardic " * 30) == []


def test_continual_pretraining_is_plain_language_modelling_in_windows():
    tok = build_tokenizer("chatml")
    note = "Patient is a 67-year-old man admitted for community acquired pneumonia. " * 6
    windows = Encoder(tok, 32).encode("", note)
    assert len(windows) > 1 and all(len(w.input_ids) <= 32 and w.prompt_len == 0 for w in windows)
    ids = [t for w in windows for t in w.input_ids.tolist()]
    assert ids == [tok.bos_token_id] + tok(note, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]


def test_system_turn_and_shots_come_before_the_query():
    tok = build_tokenizer("chatml")
    [e] = Encoder(tok, 256).encode("heart rate?", "130", system="Be brief.", shots=[("pacemaker?", "yes")])
    assert tok.decode(e.input_ids) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\npacemaker?<|im_end|>\n<|im_start|>assistant\n"
        "yes<|im_end|>\n<|im_start|>user\nheart rate?<|im_end|>\n<|im_start|>assistant\n130<|im_end|>\n"
    )


@pytest.mark.parametrize("family", ["llama", "qwen3", "gemma3"])
def test_left_padded_batch_loss_equals_the_loss_of_each_sequence_alone(family):
    loaded = build_loaded(family)
    enc = Encoder(loaded.tokenizer, 128)
    examples = [
        enc.encode("heart rate " * (1 + 3 * i) + "<mask>", ["130", "130 bpm tachycardic"][i % 2])[0] for i in range(4)
    ]
    with torch.no_grad():
        batched, n = loss_sum(loaded.model, collate(examples, pad_id=0))
        alone = [loss_sum(loaded.model, dict(collate([e], pad_id=0), keep=len(e.input_ids))) for e in examples]
    assert n == sum(m for _, m in alone) == sum(len(e.input_ids) - e.prompt_len for e in examples)
    assert torch.allclose(batched, sum(s for s, _ in alone), rtol=1e-5)


def test_a_step_holds_the_same_examples_however_they_are_sorted():
    lengths = [5, 50, 7, 30, 9, 12, 40, 3, 8, 22]
    plan = step_plan(lengths, seed=0, epoch=0, effective=4, micro=2)
    assert [sum(len(mb) for mb in step) for step in plan] == [4, 4, 2]
    flat = sorted(int(i) for step in plan for mb in step for i in mb)
    assert flat == list(range(10))
    for step in plan:  # longest first inside a step
        order = [lengths[i] for mb in step for i in mb]
        assert order == sorted(order, reverse=True)
    assert [x.tolist() for s in plan for x in s] == [
        x.tolist() for s in step_plan(lengths, seed=0, epoch=0, effective=4, micro=2) for x in s
    ]
    assert [x.tolist() for s in plan for x in s] != [
        x.tolist() for s in step_plan(lengths, seed=0, epoch=1, effective=4, micro=2) for x in s
    ]


def test_a_mask_early_in_a_long_note_keeps_a_window_around_it():
    tok = build_tokenizer("chatml")
    filler = "Patient is a 67-year-old man admitted for community acquired pneumonia. "
    note = filler * 3 + "heart rate <mask> bpm. " + filler * 8
    prompt = f"Fill in the masked word in the following sentence. {note}"
    [plain] = Encoder(tok, 96).encode(prompt, "130")  # without keep_text: the end of the note, no mask
    assert "<mask>" not in tok.decode(plain.input_ids)
    [e] = Encoder(tok, 96, keep_text="<mask>").encode(prompt, "130")
    text = tok.decode(e.input_ids)
    assert e.truncated and len(e.input_ids) <= 96
    assert "user\nFill in the masked word in the following sentence. " in text  # the instruction stays
    user = text.split("sentence. ", 1)[1].split("<|im_end|>")[0]
    before, after = user.split("<mask>")
    assert len(tok(before)["input_ids"]) >= 10 and len(tok(after)["input_ids"]) >= 10  # context on both sides
    assert not user.endswith(filler * 8)  # cut from the right as well
    assert Encoder(tok, 400, keep_text="<mask>").encode(prompt, "130")[0].truncated is False  # no cut needed


def test_a_mask_near_the_end_is_cut_from_the_left_as_without_keep_text():
    tok = build_tokenizer("chatml")
    note = " ".join(["Patient is a 67-year-old man admitted for community acquired pneumonia."] * 20)
    prompt = f"Fill in the masked word in the following sentence. {note} Vital signs: heart rate <mask> bpm"
    [with_keep], [without] = (Encoder(tok, 96, keep_text=k).encode(prompt, "130") for k in ("<mask>", None))
    assert with_keep.input_ids.tolist() == without.input_ids.tolist() and with_keep.truncated


def test_an_example_is_dropped_only_when_the_mask_itself_cannot_be_kept():
    tok = build_tokenizer("chatml")
    prompt = "Fill in the masked word in the following sentence. heart rate <mask> bpm " + "x " * 200
    assert Encoder(tok, 40, keep_text="<mask>").encode(prompt, "130 " * 20) == []  # the answer alone fills it


NO_SYSTEM_ROLE = (  # a Gemma-2-like template: a system message raises
    "{% for message in messages %}{% if message['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{ '<start_of_turn>' + role + '\n' + message['content'] + '<end_of_turn>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
)
DSM_INSTRUCTION = "Fill in the masked word in the following sentence."
MASKED = "Vital signs: heart rate <mask> bpm"


def _no_system_role_tokenizer():
    tok = build_tokenizer.__wrapped__("chatml")  # a fresh copy: the cached one is shared
    tok.chat_template = NO_SYSTEM_ROLE
    return tok


def test_the_dsm_instruction_is_the_system_turn_where_the_template_has_one():
    tok = build_tokenizer("chatml")
    encoder = Encoder(tok, 256, system_instruction=True)
    assert encoder.has_system_role
    [e] = encoder.encode(PROMPT, "130")
    prompt = tok.decode(e.input_ids[: e.prompt_len])
    assert prompt == (
        f"<|im_start|>system\n{DSM_INSTRUCTION}<|im_end|>\n"
        f"<|im_start|>user\n{MASKED}<|im_end|>\n<|im_start|>assistant\n"
    )
    assert "You are a helpful assistant." not in prompt  # the instruction replaces the default system turn
    assert tok.decode(e.input_ids[e.prompt_len :]) == "130<|im_end|>\n"


def test_the_dsm_instruction_stays_in_the_user_turn_when_asked_or_without_a_system_role():
    chatml = build_tokenizer("chatml")
    [user_layout] = Encoder(chatml, 256).encode(PROMPT, "130")  # system_instruction off: the option
    assert f"user\n{PROMPT}<|im_end|>" in chatml.decode(user_layout.input_ids)

    no_system = _no_system_role_tokenizer()
    encoder = Encoder(no_system, 256, system_instruction=True)
    assert not encoder.has_system_role
    [e] = encoder.encode(PROMPT, "130")
    assert (
        no_system.decode(e.input_ids[: e.prompt_len])
        == f"<start_of_turn>user\n{PROMPT}<end_of_turn>\n<start_of_turn>model\n"
    )

    plain = build_tokenizer("plain")  # no chat template at all
    [e] = Encoder(plain, 256, system_instruction=True).encode(PROMPT, "130")
    assert plain.decode(e.input_ids[: e.prompt_len]) == f"<|im_start|>{PROMPT}\n"


def test_a_prompt_without_the_instruction_gets_no_system_turn_of_its_own():
    tok = build_tokenizer("chatml")
    [e] = Encoder(tok, 256, system_instruction=True).encode(MASKED, "130")
    assert tok.decode(e.input_ids[: e.prompt_len]).startswith("<|im_start|>system\nYou are a helpful assistant.")


def test_with_the_instruction_in_the_system_turn_a_long_note_is_cut_and_the_mask_kept():
    tok = build_tokenizer("chatml")
    note = " ".join(["Patient is a 67-year-old man admitted for community acquired pneumonia."] * 20)
    [e] = Encoder(tok, 96, keep_text="<mask>", system_instruction=True).encode(
        f"{DSM_INSTRUCTION} {note} {MASKED}", "130"
    )
    text = tok.decode(e.input_ids)
    assert e.truncated and len(e.input_ids) <= 96
    assert text.startswith(f"<|im_start|>system\n{DSM_INSTRUCTION}<|im_end|>\n<|im_start|>user\n")
    assert "heart rate <mask> bpm<|im_end|>" in text


def test_the_training_encoder_resolves_max_length_for_the_device_and_the_instruction_turn():
    from ml.training import CausalLMConfig
    from ml.training.encoding import training_encoder

    loaded = build_loaded("llama")  # context 1024
    cpu = training_encoder(loaded, CausalLMConfig(), "cpu", keep_text="<mask>")
    gpu = training_encoder(loaded, CausalLMConfig(), "cuda")
    assert (cpu.max_length, cpu.system_instruction, cpu.keep_text) == (512, True, "<mask>")
    assert gpu.max_length == 1024
    assert training_encoder(loaded, CausalLMConfig(max_length=64, instruction_turn="user"), "cuda").max_length == 64
    assert not training_encoder(loaded, CausalLMConfig(instruction_turn="user"), "cpu").system_instruction
