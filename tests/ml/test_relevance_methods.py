"""The registry of relevance methods (ml.relevance.methods): its order rules, and that a method
is one object: one registered by a test runs through configurations and compute_relevance with
no other change."""

import numpy as np
import pytest
import torch

from ml.relevance import ConfigError, RelevanceConfig, compute_relevance
from ml.relevance import methods as registry
from ml.relevance.methods import GradientMethod, RelevanceMethod

NOTES = ["Heart rate 120 bpm and blood pressure 90/60.", "Afebrile, pulse 64 and regular."]
TASKS = ["heart rate", "fever"]


def test_the_registry_holds_the_papers_methods_with_attnlrp_the_default():
    assert registry.names() == ("attnlrp", "attention", "grad_input", "integrated_gradients", "occlusion")
    assert registry.DEFAULT == "attnlrp" == RelevanceConfig().method
    assert registry.get("attention").eager_attention and not registry.get("attention").shares_prefix
    with pytest.raises(ValueError, match="unknown relevance method 'rollout'; choose one of attnlrp"):
        registry.get("rollout")


def test_the_method_that_patches_the_process_runs_after_the_others():
    assert registry.run_order(["attnlrp", "grad_input", "attention", "attnlrp"]) == [
        "attention",
        "grad_input",
        "attnlrp",
    ]
    assert registry.run_order(["grad_input"]) == ["grad_input"]
    assert registry.run_order(["attnlrp", "nope"]) == ["attnlrp", "nope"]  # unknown: last, for the caller to refuse


def test_a_configuration_names_the_methods_it_accepts():
    with pytest.raises(ConfigError, match="unknown method 'rollout'; choose one of attnlrp, attention, grad_input"):
        RelevanceConfig(method="rollout")


class Recency(RelevanceMethod):
    """A toy method: relevance grows with the position, so the note's last token is the top."""

    name = "recency"
    label = "Recency"

    def batch(self, model, input_ids, kwargs, targets):
        with torch.no_grad():
            logits = model(input_ids=input_ids, **kwargs).logits[:, -targets.keep :, :]
        positions = torch.arange(input_ids.shape[1], dtype=torch.float32) + 1
        return positions.expand(input_ids.shape), logits


class PlainGradientAgain(GradientMethod):
    name = "grad-again"
    label = "Gradient x input, registered again"


def test_a_registered_method_runs_through_compute_relevance(monkeypatch, tiny_llama):
    monkeypatch.setitem(registry.REGISTRY, "recency", Recency())
    results = compute_relevance(tiny_llama, NOTES, TASKS, RelevanceConfig(method="recency"))
    for result in results:
        assert result.scores[-1] == 1.0 and np.all(np.diff(result.scores) > 0)
    assert RelevanceConfig(method="recency").key.startswith("recency-next-")


def test_a_registered_gradient_method_shares_the_prefix_like_grad_input(monkeypatch, tiny_llama):
    """The new object gets the shared-prefix path and the unpatched check of its base for free:
    its maps are grad_input's, bit for bit (same computation, same order)."""
    monkeypatch.setitem(registry.REGISTRY, "grad-again", PlainGradientAgain())
    notes, tasks = [NOTES[0]] * 2, TASKS  # one note, two tasks: a prefix group
    again = compute_relevance(tiny_llama, notes, tasks, RelevanceConfig(method="grad-again"))
    plain = compute_relevance(tiny_llama, notes, tasks, RelevanceConfig(method="grad_input"))
    for a, b in zip(again, plain):
        np.testing.assert_array_equal(a.raw_scores, b.raw_scores)
