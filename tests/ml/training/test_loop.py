import copy
import json
from dataclasses import dataclass

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

import ml.lrp
from ml.models import load_model
from ml.training import TrainingCancelled, TrainingError, train_causal_lm
from ml.training.batching import collate, loss_sum
from ml.training.encoding import Encoder
from tests.ml.conftest import build_loaded
from tests.ml.training.conftest import dsm_pairs, fast_config


def state(model) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def assert_same_weights(a: dict, b: dict, atol=1e-6):
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k], b[k], atol=atol, rtol=1e-5), k


def mean_answer_loss(loaded, pairs, max_length=96) -> float:
    enc = Encoder(loaded.tokenizer, max_length, system_instruction=True)  # DSM's default layout, as trained
    examples = [e for p in pairs for e in enc.encode(p.prompt, p.answer)]
    with torch.no_grad():
        total, n = loss_sum(loaded.model.eval(), collate(examples, pad_id=0))
    return float(total) / n


ONE_STEP_OF_8 = dict(effective_batch_size=8, max_steps=1)


@dataclass
class OneStep:
    gradients: list[torch.Tensor]  # what the optimizer was handed, in its parameter order
    before: dict
    after: dict

    def assert_trained(self, lr: float):
        """The step moved the weights: AdamW's first step moves each element with a non-zero
        gradient by about lr, so a trainer that skipped the step (or zeroed gradients) fails."""
        assert any(g.abs().max() > 0 for g in self.gradients), "no gradient reached the optimizer"
        moved = max((self.after[k] - self.before[k]).abs().max().item() for k in self.before)
        assert moved > lr / 2, f"the weights moved by at most {moved:.3g}, expected about lr={lr}"


def one_step(output_dir, config, pairs=None) -> OneStep:
    """Train the tiny llama for one step, catching the gradients at the optimizer's step."""
    caught = []

    def catch(optimizer, args, kwargs):
        caught.append([p.grad.detach().clone() for group in optimizer.param_groups for p in group["params"]])

    loaded = build_loaded("llama")
    before = state(loaded.model)
    hook = register_optimizer_step_pre_hook(catch)
    try:
        train_causal_lm(loaded, pairs or dsm_pairs(8), config, output_dir=output_dir)
    finally:
        hook.remove()
    assert len(caught) == 1, f"expected one optimizer step, saw {len(caught)}"
    return OneStep(caught[0], before, state(loaded.model))


def assert_same_gradients(a: list[torch.Tensor], b: list[torch.Tensor]):
    """Equal up to the order of fp32 additions. Another grouping of the same examples pads
    to other lengths and sums the per-token terms in another order, through matmuls of other
    shapes whose kernels (AVX2, AVX-512) block their reductions differently; a reordered fp32
    sum differs by a few units of eps times the magnitudes summed. So each tensor is compared
    with atol = 2^8 eps x its largest element (eps = 1.19e-7): a 2-core AVX2 machine measured
    at most 10 eps of that scale, and a 0.1% error in the accumulation (far below any real
    mistake: a per-micro-batch mean is off by percents) is about 8,000 eps and fails."""
    assert len(a) == len(b) and len(a) > 0
    eps = torch.finfo(torch.float32).eps
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        assert x.shape == y.shape, i
        scale = x.abs().max().item()
        worst = (x - y).abs().max().item()
        assert worst <= 2**8 * eps * scale, f"parameter {i}: max |diff| {worst:.3g} vs its scale {scale:.3g}"


def test_fewer_examples_than_one_effective_batch_still_take_a_step(tmp_path):
    events = []
    result = train_causal_lm(
        build_loaded("llama"),
        dsm_pairs(3),
        fast_config(effective_batch_size=8),
        output_dir=tmp_path,
        on_progress=events.append,
    )
    assert result.steps == 1
    step_events = [e for e in events if not e.message]
    assert [e.step for e in step_events] == [1] and step_events[0].total_steps == 1
    assert step_events[0].loss > 0 and step_events[0].tokens_per_s > 0
    assert (tmp_path / "final" / "config.json").is_file() and not (tmp_path / "checkpoint-last").exists()


def test_steps_are_epochs_times_steps_per_epoch_rounded_up(tmp_path):
    result = train_causal_lm(build_loaded("llama"), dsm_pairs(10), fast_config(epochs=1.5), output_dir=tmp_path)
    assert result.steps == 5  # ceil(10 / 4) = 3 steps per epoch, x 1.5 = 4.5 -> 5
    assert [e.step for e in result.history if not e.message] == [1, 2, 3, 4, 5]


def test_accumulated_micro_batches_give_the_gradient_of_the_whole_batch(tmp_path):
    """One step of 8 examples as 2, 4 or 8 micro-batches: the gradient handed to the optimizer
    is the same. Compared before AdamW, which divides by sqrt(v): on near-zero elements it turns
    rounding noise into lr-sized updates, so updated weights would compare noise, not the claim.
    The tolerance is in the tensor's own scale, see `assert_same_gradients`."""
    steps = [
        one_step(tmp_path / str(micro), fast_config(micro_batch_size=micro, **ONE_STEP_OF_8)) for micro in (4, 2, 1)
    ]
    for step in steps:
        step.assert_trained(lr=fast_config().lr)
    assert_same_gradients(steps[0].gradients, steps[1].gradients)
    assert_same_gradients(steps[0].gradients, steps[2].gradients)


def test_the_gradient_comparison_sees_a_wrongly_scaled_micro_batch(tmp_path):
    """The tolerance is tight enough to catch accumulation done wrong: a loss averaged per
    micro-batch instead of over the step's tokens scales the gradient by a few percent."""
    step = one_step(tmp_path, fast_config(micro_batch_size=4, **ONE_STEP_OF_8))
    skewed = [g * (1 + 1e-3) for g in step.gradients]
    with pytest.raises(AssertionError):
        assert_same_gradients(step.gradients, skewed)


@pytest.mark.parametrize("finetune", ["full", "lora"])
def test_cancel_then_resume_ends_with_the_weights_of_an_uninterrupted_run(tmp_path, finetune):
    config = fast_config(finetune=finetune, epochs=2, lora_r=4, lora_alpha=8, lora_dropout=0.1)
    reference = build_loaded("llama")
    train_causal_lm(reference, dsm_pairs(8), config, output_dir=tmp_path / "a")

    calls = []

    def stop_at_sixth_micro_batch():  # 2 micro-batches per step: stops inside step 3
        calls.append(1)
        return len(calls) == 6

    events = []
    with pytest.raises(TrainingCancelled) as cancelled:
        train_causal_lm(
            build_loaded("llama"),
            dsm_pairs(8),
            config,
            output_dir=tmp_path / "b",
            should_stop=stop_at_sixth_micro_batch,
            on_progress=events.append,
        )
    assert cancelled.value.step == 2
    saved = json.loads((tmp_path / "b" / "checkpoint-last" / "state.json").read_text())
    assert saved["step"] == 2 and saved["config"]["finetune"] == finetune
    assert events[-1].message.startswith("checkpoint saved")

    resumed = build_loaded("llama")
    result = train_causal_lm(resumed, dsm_pairs(8), config, output_dir=tmp_path / "b")
    assert result.steps == 4
    assert [e.step for e in result.history if not e.message] == [1, 2, 3, 4]
    assert_same_weights(state(reference.model), state(resumed.model), atol=1e-7)


def test_cancel_before_any_step_saves_nothing_and_raises(tmp_path):
    with pytest.raises(TrainingCancelled):
        train_causal_lm(
            build_loaded("llama"), dsm_pairs(4), fast_config(), output_dir=tmp_path, should_stop=lambda: True
        )
    assert not (tmp_path / "checkpoint-last").exists() and not (tmp_path / "final").exists()


def test_periodic_checkpoints_are_written(tmp_path):
    calls = []
    with pytest.raises(TrainingCancelled):
        train_causal_lm(
            build_loaded("llama"),
            dsm_pairs(8),
            fast_config(epochs=2, checkpoint_every=1),
            output_dir=tmp_path,
            should_stop=lambda: calls.append(1) or len(calls) == 5,
        )
    folder = tmp_path / "checkpoint-last"
    assert json.loads((folder / "state.json").read_text())["step"] == 2
    assert {p.name for p in folder.iterdir()} == {"state.json", "trainable.safetensors", "training_state.pt"}


def test_resuming_with_another_config_is_refused(tmp_path):
    with pytest.raises(TrainingCancelled):
        calls = []
        train_causal_lm(
            build_loaded("llama"),
            dsm_pairs(8),
            fast_config(),
            output_dir=tmp_path,
            should_stop=lambda: calls.append(1) or len(calls) == 3,
        )
    with pytest.raises(TrainingError, match="lr"):
        train_causal_lm(build_loaded("llama"), dsm_pairs(8), fast_config(lr=1e-4), output_dir=tmp_path)
    result = train_causal_lm(
        build_loaded("llama"), dsm_pairs(8), fast_config(lr=1e-4), output_dir=tmp_path, resume=False
    )
    assert result.steps == 2


@pytest.mark.parametrize("finetune,lr", [("full", 3e-3), ("lora", 1e-2)])
def test_training_reduces_the_answer_loss_on_a_tiny_set(tmp_path, finetune, lr):
    pairs = dsm_pairs(8)
    loaded = build_loaded("llama")
    before = mean_answer_loss(loaded, pairs)
    result = train_causal_lm(
        loaded, pairs, fast_config(finetune=finetune, lr=lr, epochs=6, lora_r=8, lora_alpha=16), output_dir=tmp_path
    )
    after = mean_answer_loss(loaded, pairs)
    assert after < 0.5 * before
    assert result.final_loss < result.history[1].loss


def test_the_merged_lora_folder_loads_with_load_model(tmp_path):
    loaded = build_loaded("qwen2")
    result = train_causal_lm(
        loaded, dsm_pairs(4), fast_config(finetune="lora", lora_r=4, lora_alpha=8), output_dir=tmp_path
    )
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    again = load_model(str(result.final_dir), dtype="float32")
    assert again.family.name == "qwen2" and type(again.model) is type(loaded.model)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        assert torch.allclose(again.model(ids).logits, loaded.model(ids).logits, atol=1e-5)


def test_a_missing_mask_token_is_added_once_and_saved_with_the_model(tmp_path):
    loaded = build_loaded("llama")
    loaded.tokenizer = copy.deepcopy(loaded.tokenizer)  # the built tokenizer is shared (lru_cache)
    size = len(loaded.tokenizer)
    pairs = [type(p)(p.prompt.replace("<mask>", "<dsm_mask>"), p.answer) for p in dsm_pairs(4)]
    result = train_causal_lm(loaded, pairs, fast_config(), output_dir=tmp_path, mask_token="<dsm_mask>")
    again = load_model(str(result.final_dir))
    assert len(again.tokenizer) == size + 1
    assert again.tokenizer("<dsm_mask>", add_special_tokens=False)["input_ids"] == [size]
    assert again.model.get_input_embeddings().weight.shape[0] == size + 1


def test_bf16_autocast_trains(tmp_path):
    result = train_causal_lm(build_loaded("qwen3"), dsm_pairs(4), fast_config(precision="bf16"), output_dir=tmp_path)
    assert result.steps == 1 and 0 < result.final_loss < 100


def test_it_refuses_to_train_in_a_process_patched_by_lxt(tmp_path):
    with pytest.MonkeyPatch.context() as patch, pytest.raises(RuntimeError, match="lxt"):
        patch.setattr(ml.lrp, "_PATCHED", {"llama"})  # what ml.lrp.patch() records
        train_causal_lm(build_loaded("llama"), dsm_pairs(2), fast_config(), output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_gradient_checkpointing_changes_memory_not_results(tmp_path):
    """Recomputing activations in the backward pass gives the same gradients (same kernels,
    same order, so usually bit-equal; compared with the reduction-order tolerance all the same)."""
    steps = []
    for checkpointing in (False, True):
        config = fast_config(gradient_checkpointing=checkpointing, finetune="lora", lora_r=4, lora_alpha=8, max_steps=1)
        steps.append(one_step(tmp_path / str(checkpointing), config, pairs=dsm_pairs(4)))
    for step in steps:
        step.assert_trained(lr=fast_config().lr)
    assert_same_gradients(steps[0].gradients, steps[1].gradients)


def test_a_run_whose_only_step_is_a_warmup_step_reports_unchanged_weights(tmp_path):
    loaded = build_loaded("llama")
    before = state(loaded.model)
    result = train_causal_lm(loaded, dsm_pairs(4), fast_config(warmup_ratio=0.1, max_steps=1), output_dir=tmp_path)
    assert result.steps == 1 and result.weights_changed is False
    after = state(loaded.model)
    assert all(torch.equal(before[k], after[k]) for k in before)


@pytest.mark.parametrize("finetune", ["full", "lora"])
def test_a_run_that_learns_reports_changed_weights(tmp_path, finetune):
    result = train_causal_lm(
        build_loaded("llama"), dsm_pairs(4), fast_config(max_steps=1, finetune=finetune), output_dir=tmp_path
    )
    assert result.weights_changed is True


def test_the_weights_checksum_sees_a_change_of_one_element_by_one_ulp():
    from ml.training.finetune import weights_checksum

    model = build_loaded("llama").model
    before = weights_checksum(model)
    name, p = next(iter(model.named_parameters()))
    with torch.no_grad():
        p.view(-1)[0] = torch.nextafter(p.view(-1)[0], torch.tensor(float("inf")))
    after = weights_checksum(model)
    assert [k for k in before if before[k] != after[k]] == [name]


def test_a_checkpoint_loads_onto_the_device_a_cpu_process_group_gives(tmp_path):
    """accelerate gives each rank of a CPU process group the device cpu:0, which safetensors
    refuses by that name: a resumed distributed run on the CPU failed on it."""
    from ml.training import checkpoint as ckpt_io

    calls = []
    with pytest.raises(TrainingCancelled):
        train_causal_lm(
            build_loaded("llama"),
            dsm_pairs(8),
            fast_config(epochs=2, checkpoint_every=1),
            output_dir=tmp_path,
            should_stop=lambda: calls.append(1) or len(calls) == 3,
        )
    saved = ckpt_io.load(ckpt_io.find(tmp_path), device=torch.device("cpu", 0))
    assert saved.step == 1 and saved.trainable


def test_a_finished_run_leaves_no_half_written_checkpoint_of_a_killed_attempt(tmp_path):
    killed = tmp_path / ".checkpoint-last.tmp-999999"  # what a process killed while saving leaves
    killed.mkdir()
    (killed / "trainable.safetensors").write_bytes(b"partial")
    train_causal_lm(build_loaded("llama"), dsm_pairs(4), fast_config(), output_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final"]
