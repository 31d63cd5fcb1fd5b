"""ml.lrp: lxt 2.1 imports without torchvision, and our relevance equals lxt's own recipe.

lxt patches are process-global, so every patched computation runs in a spawned child
(`patched_child`: patched only through ml.lrp; `lxt_reference_child`: patched only by
lxt's README recipe). The pytest process itself is never patched (conftest checks this
after every test), so the tests can run in any order.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import ml.lrp
from tests.ml.conftest import build_loaded

NOTES = [
    "Vital signs: heart rate 130 bpm, tachycardic. He has a pacemaker since 2019.",
    "Chest X-ray shows right lower lobe consolidation.",
    "The patient denies chest pain. Temperature 38.5 C, oxygen saturation 91%.",
]
TASKS = ["heart rate", "presence of pacemaker", "body temperature"]
FAMILIES = ["llama", "qwen2", "qwen3", "gemma3"]


# ---- functions run inside the spawned children (module level, so they pickle) ----


def child_ours(family, notes, tasks, batch_size, explain="next"):
    from ml.relevance import compute_relevance

    loaded = build_loaded(family)
    results = compute_relevance(loaded, notes, tasks, method="attnlrp", batch_size=batch_size, explain=explain)
    return [r.raw_scores for r in results], sorted(ml.lrp.patched_families()), _checksum(loaded.model)


def child_lxt_recipe(family, notes, tasks):
    """lxt's README recipe, one prompt at a time, full logits: the reference numbers."""
    from ml.relevance import encode_pair

    lxt_efficient = ml.lrp.import_lxt()  # only the torchvision placeholder; patches nothing
    loaded = build_loaded(family)
    lxt_efficient.monkey_patch(loaded.family.modeling())  # lxt's default map for this module
    model = loaded.model
    for param in model.parameters():
        param.requires_grad = False
    out = []
    for note, task in zip(notes, tasks):
        enc = encode_pair(
            loaded.tokenizer, note, task, include_target=True, chat_template_kwargs=loaded.family.chat_template_kwargs
        )
        input_ids = torch.tensor([enc.input_ids])
        input_embeds = model.get_input_embeddings()(input_ids)
        output_logits = model(inputs_embeds=input_embeds.requires_grad_(), use_cache=False).logits
        max_logits, _ = torch.max(output_logits[0, -1, :], dim=-1)
        max_logits.backward()
        relevance = (input_embeds.grad * input_embeds).float().sum(-1).detach().cpu()[0]
        out.append(relevance.numpy()[enc.note_index])
    return out, _checksum(model)


def child_patch_state_after_relevance():
    from ml.relevance import compute_relevance

    loaded = build_loaded("llama")
    compute_relevance(loaded, NOTES[:1], TASKS[:1], method="attnlrp")
    try:
        ml.lrp.assert_not_patched()
        refused_training = None
    except RuntimeError as exc:
        refused_training = str(exc)
    try:
        compute_relevance(loaded, NOTES[:1], TASKS[:1], method="grad_input")
        refused_grad_input = None
    except RuntimeError as exc:
        refused_grad_input = str(exc)
    return ml.lrp.is_patched(), refused_training, refused_grad_input, torch.nn.Dropout.forward.__module__


def child_patch_all_families_quietly():
    import warnings

    from ml.models import FAMILIES

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for family in FAMILIES.values():
            ml.lrp.patch(family)
            ml.lrp.patch(family)  # twice: a no-op
    return sorted(ml.lrp.patched_families()), [str(w.message) for w in caught]


def _checksum(model) -> float:
    return float(sum(p.double().sum() for p in model.parameters()))


# ---- tests ----


def test_lxt_imports_without_torchvision():
    lxt_efficient = ml.lrp.import_lxt()
    assert callable(lxt_efficient.monkey_patch)
    if "torchvision" not in sys.modules:
        placeholder = sys.modules["lxt.efficient.models.vit_torch"]
        assert placeholder.cp_LRP == {}
    assert not ml.lrp.is_patched()  # importing lxt patches nothing


def test_each_family_names_an_lxt_patch_map():
    from ml.models import FAMILIES

    for family in FAMILIES.values():
        patch_map = ml.lrp.patch_map(family)
        assert family.modeling() in patch_map  # the attention patch targets the modeling module
        assert torch.nn.Dropout in patch_map


def test_unpatched_process_may_train(tmp_path):
    """The guard that refuses a patched process (child_patch_state_after_relevance) lets an
    unpatched one through: a real training step runs here and moves the weights."""
    from ml.training import train_causal_lm
    from tests.ml.training.conftest import dsm_pairs, fast_config

    assert not ml.lrp.is_patched()
    result = train_causal_lm(build_loaded("llama"), dsm_pairs(2), fast_config(max_steps=1), output_dir=tmp_path)
    assert result.steps == 1 and result.weights_changed is True


@pytest.mark.parametrize("family", FAMILIES)
def test_relevance_equals_lxt_recipe(family, patched_child, lxt_reference_child):
    ours, patched, ours_sum = patched_child.apply(child_ours, (family, NOTES, TASKS, 3))
    reference, reference_sum = lxt_reference_child.apply(child_lxt_recipe, (family, NOTES, TASKS))
    assert family in patched
    assert ours_sum == reference_sum  # the same tiny weights in both processes
    assert len(ours) == len(reference) == len(NOTES)
    for a, b in zip(ours, reference, strict=True):
        assert a.shape == b.shape
        assert torch.allclose(torch.from_numpy(a), torch.from_numpy(b), rtol=1e-4, atol=1e-6)


def test_attnlrp_differs_from_plain_gradient_x_input(patched_child):
    from ml.relevance import compute_relevance

    lrp, _, _ = patched_child.apply(child_ours, ("llama", NOTES[:1], TASKS[:1], 1))
    plain = compute_relevance(build_loaded("llama"), NOTES[:1], TASKS[:1], method="grad_input")[0].raw_scores
    assert lrp[0].shape == plain.shape
    assert not np.allclose(lrp[0], plain, rtol=1e-3, atol=1e-7)


def test_patched_process_refuses_training_and_plain_gradients(patched_child):
    patched, refused_training, refused_grad_input, dropout_module = patched_child.apply(
        child_patch_state_after_relevance
    )
    assert patched
    assert dropout_module.startswith("lxt.")
    assert refused_training and "must not train" in refused_training
    assert refused_grad_input and "unpatched process" in refused_grad_input


def test_patching_every_family_twice_is_quiet(patched_child):
    families, warnings_seen = patched_child.apply(child_patch_all_families_quietly)
    assert families == sorted(FAMILIES)
    assert not [w for w in warnings_seen if "patch" in w.lower()]
