"""The step arithmetic shared by the training loop and the launch checks (ml.training.schedule)."""

import pytest
import torch

from ml.training import CausalLMConfig
from ml.training.schedule import lr_factor, plan_steps


@pytest.mark.parametrize("scheduler", ["cosine", "linear", "constant", "constant_with_warmup"])
@pytest.mark.parametrize("total,warmup", [(1, 1), (2, 1), (5, 0), (7, 3), (10, 10)])
def test_the_learning_rate_factor_matches_transformers_schedulers(scheduler, total, warmup):
    from transformers import get_scheduler

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    reference = get_scheduler(scheduler, optimizer, num_warmup_steps=warmup, num_training_steps=total)
    for step in range(total):
        assert lr_factor(step, total, warmup, scheduler) == pytest.approx(optimizer.param_groups[0]["lr"], abs=1e-12)
        optimizer.step()
        reference.step()


def test_a_one_step_run_with_warmup_has_no_step_that_learns():
    plan = plan_steps(CausalLMConfig(warmup_ratio=0.1, max_steps=1), n_examples=500)
    assert (plan.total, plan.warmup, plan.learning) == (1, 1, 0)


def test_a_small_dataset_under_one_effective_batch_is_one_step_and_learns_nothing_with_the_paper_warmup():
    plan = plan_steps(CausalLMConfig(), n_examples=12)  # paper: effective batch 128, warmup 0.1
    assert (plan.total, plan.learning) == (1, 0)


def test_without_warmup_or_with_a_constant_schedule_every_step_learns():
    assert plan_steps(CausalLMConfig(warmup_ratio=0.0, max_steps=1), 500).learning == 1
    assert plan_steps(CausalLMConfig(scheduler="constant", max_steps=1), 500).learning == 1


def test_only_the_first_warmup_step_has_learning_rate_zero():
    plan = plan_steps(CausalLMConfig(warmup_ratio=0.5, effective_batch_size=4, micro_batch_size=4), 40)
    assert (plan.total, plan.warmup, plan.learning) == (10, 5, 9)


def test_no_examples_is_no_step():
    assert plan_steps(CausalLMConfig(), 0).total == 0
