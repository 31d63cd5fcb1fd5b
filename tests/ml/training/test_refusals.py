"""ml.training refuses in English, each refusal one template of ml.training.refusals with its values,
so that the web app can show the same refusal, values unchanged, in its reader's language."""

import ast
from pathlib import Path

import pytest

from ml.training import refusals
from ml.training.config import CausalLMConfig, PromptingConfig, SFTConfig
from ml.training.data import LabeledItem, split_items
from ml.training.errors import TrainingError, TrainingInputError

PACKAGE = Path(refusals.__file__).parent
RAISERS = {"TrainingError", "TrainingInputError", "_check"}


def _refusal_calls():
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in RAISERS:
                yield path.name, node


def _template_argument(name: str, call: ast.Call):
    args = call.args[1:] if name == "_check" else call.args
    return args[0] if args else None


def test_every_refusal_of_ml_training_is_raised_with_a_template_of_refusals():
    seen = 0
    for filename, call in _refusal_calls():
        argument = _template_argument(call.func.id, call)
        where = f"{filename}:{call.lineno}"
        if getattr(argument, "id", None) == "template":  # config.py's _check passing its template on
            continue
        assert isinstance(argument, ast.Attribute), f"{where}: a refusal's text is a template of refusals.py"
        assert getattr(argument.value, "id", None) == "refusals", where
        assert getattr(refusals, argument.attr) in refusals.TEMPLATES, where
        seen += 1
    assert seen >= len(refusals.TEMPLATES)


def test_templates_lists_every_refusal_once():
    constants = {v for k, v in vars(refusals).items() if k.isupper() and isinstance(v, str)}
    assert constants == set(refusals.TEMPLATES)
    assert len(refusals.TEMPLATES) == len(set(refusals.TEMPLATES))


def test_a_refusal_keeps_its_template_and_values_and_says_them_in_english():
    with pytest.raises(TrainingInputError) as caught:
        CausalLMConfig(effective_batch_size=130, micro_batch_size=4)
    error = caught.value
    assert str(error) == "effective_batch_size (130) must be a multiple of micro_batch_size (4)"
    assert (error.template, error.values) == (refusals.MULTIPLE, {"effective": 130, "micro": 4})
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda: CausalLMConfig(precision="fp8"), "precision must be one of ('auto', 'bf16', 'fp32'), got 'fp8'"),
        (lambda: CausalLMConfig(lr=0), "lr must be > 0, got 0"),
        (lambda: CausalLMConfig(cpu_offload=True), "cpu_offload needs sharding 'fsdp'"),
        (lambda: PromptingConfig(max_length=10), "max_length must be >= 16"),
        (lambda: PromptingConfig(variants=0), "variants must be >= 1, got 0"),
        (
            lambda: SFTConfig(instruction_turn="system"),
            "SFT keeps its instruction in the user turn (instruction_turn 'user'): its predictions are scored with "
            "that prompt",
        ),
        (
            lambda: CausalLMConfig.from_dict({"learning_rate": 1}),
            "unknown CausalLMConfig key(s): learning_rate; known keys: adam_eps, checkpoint_every, cpu_offload, "
            "effective_batch_size, epochs, finetune, gradient_checkpointing, instruction_turn, lora_alpha, "
            "lora_dropout, lora_r, lora_target_modules, lr, max_grad_norm, max_length, max_steps, micro_batch_size, "
            "precision, scheduler, seed, sharding, warmup_ratio, weight_decay",
        ),
        (
            lambda: LabeledItem("n3-t1", "3", "fever", "Fever?", ["yes", "no"], "text", "maybe"),
            "item 'n3-t1': label 'maybe' is not one of ['yes', 'no']",
        ),
        (lambda: split_items([], test_ratio=1.5), "test_ratio must be in [0, 1], got 1.5"),
    ],
)
def test_each_refusal_reads_as_before_templates(make, said):
    with pytest.raises(TrainingInputError) as caught:
        make()
    assert str(caught.value) == said
    assert caught.value.template % caught.value.values == said


def test_a_training_error_with_a_folder_names_it_as_given():
    error = TrainingError(refusals.OTHER_DATA, folder=Path("/data/training/run-7-ab12/checkpoint-last"))
    assert str(error) == (
        "/data/training/run-7-ab12/checkpoint-last was written for other training data; use resume=False to start over"
    )
    assert TrainingError("a message of its own").template == "a message of its own"
