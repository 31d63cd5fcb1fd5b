"""ml.faithfulness: exact values on a linear toy, random maps at the random baseline, the random
draws and the paired CI where the answer is known, verdicts refused on a degenerate interval, the
batched model scorer against a plain loop, the forward-pass budget, and the command."""

from __future__ import annotations

import json
import multiprocessing

import numpy as np
import pytest

from ml.faithfulness import (
    FRACTIONS,
    PASSES_PER_PAIR,
    FaithfulnessConfig,
    ModelScorer,
    PairInput,
    evaluate,
    model_pairs,
    n_kept,
    neutral_token_id,
    random_draw,
    ranking,
    verdicts,
)
from ml.relevance import RelevanceConfig, compute_relevance
from tests.ml.conftest import build_loaded

NOTES = [
    "Vital signs: heart rate 130 bpm, tachycardic, blood pressure 110/70 mmHg.",
    "He has a pacemaker since 2019 and takes amlodipine for hypertension.",
    "The patient denies chest pain. Temperature 38.5 C, oxygen saturation 91%.",
]


class Linear:
    """F = the sum of w over the tokens kept; counts its rows."""

    def __init__(self, w):
        self.w = np.asarray(w, dtype=np.float64)
        self.rows = 0

    def __call__(self, replace):
        self.rows += len(replace)
        return (~replace * self.w).sum(1)


def toy_pairs(n_pairs=60, n_tokens=40, seed=1):
    rng = np.random.default_rng(seed)
    pairs = []
    for i in range(n_pairs):
        w = rng.exponential(size=n_tokens)
        maps = {"exact": w, "reversed": -w, "random": rng.random(n_tokens)}
        pairs.append(PairInput((f"n{i}", "t"), Linear(w), maps))
    return pairs


def test_the_linear_toy_gives_the_hand_computed_values_and_its_own_weights_rank_best():
    w = np.array([5.0, 1.0, 3.0, 0.5, 2.0, 4.0, 0.25, 1.5, 0.75, 6.0])
    pair = PairInput(("n", "t"), Linear(w), {"exact": w, "reversed": -w})
    record = evaluate([pair], FaithfulnessConfig(n_resamples=10)).pairs[0]
    top = np.sort(w)[::-1]
    ks = [n_kept(10, f) for f in FRACTIONS]
    assert ks == [1, 1, 2, 3, 5]
    comprehensiveness = [top[:k].sum() for k in ks]  # removing the top k loses exactly their weight
    sufficiency = [top[k:].sum() for k in ks]  # keeping only them loses the rest
    exact = record["methods"]["exact"]
    assert record["full"] == w.sum()
    assert exact["comprehensiveness"] == pytest.approx(comprehensiveness, abs=1e-12)
    assert exact["sufficiency"] == pytest.approx(sufficiency, abs=1e-12)
    assert exact["deletion"] == pytest.approx([w.sum() - c for c in comprehensiveness], abs=1e-12)
    assert exact["insertion"] == pytest.approx([top[:k].sum() for k in ks], abs=1e-12)
    assert exact["aopc_comprehensiveness"] == pytest.approx(np.mean(comprehensiveness), abs=1e-12)
    reversed_ = record["methods"]["reversed"]
    assert reversed_["comprehensiveness"] == pytest.approx([top[::-1][:k].sum() for k in ks], abs=1e-12)


def test_the_exact_map_has_the_highest_comprehensiveness_above_random():
    summary = evaluate(toy_pairs(), FaithfulnessConfig(n_resamples=300)).summary
    exact, random_map = summary["methods"]["exact"], summary["methods"]["random"]
    reversed_ = summary["methods"]["reversed"]
    # For a linear F the top k by w is the k-subset of largest weight: no ranking removes more.
    assert exact["aopc_comprehensiveness"] > random_map["aopc_comprehensiveness"] > reversed_["aopc_comprehensiveness"]
    assert exact["aopc_comprehensiveness_ci"][0] > summary["random"]["aopc_comprehensiveness_ci"][1]
    assert exact["aopc_sufficiency"] < random_map["aopc_sufficiency"] < reversed_["aopc_sufficiency"]
    assert exact["aopc_sufficiency_ci"][1] < summary["random"]["aopc_sufficiency_ci"][0]


def test_random_maps_score_like_the_random_baseline():
    summary = evaluate(toy_pairs(n_pairs=200, seed=3), FaithfulnessConfig(n_resamples=500)).summary
    random_map, baseline = summary["methods"]["random"], summary["random"]
    for kind in ("aopc_comprehensiveness", "aopc_sufficiency"):
        low, high = baseline[f"{kind}_ci"]
        assert low <= random_map[kind] <= high
        low, high = random_map[f"{kind}_ci"]
        assert low <= baseline[kind] <= high
    assert baseline["draws"] == 10 and all(np.isfinite(baseline["sufficiency"]))


def test_every_pair_costs_one_full_row_ten_per_method_and_ten_per_random_draw():
    pairs = toy_pairs(n_pairs=100)
    for p in pairs:
        p.maps = {"exact": p.maps["exact"]}
    result = evaluate(pairs, FaithfulnessConfig(n_resamples=10))
    assert PASSES_PER_PAIR == 1 + 10 + 10 * 10
    assert result.forward_passes == sum(p.scorer.rows for p in pairs) == 100 * PASSES_PER_PAIR
    assert result.as_dict()["forward_passes_per_pair"] == PASSES_PER_PAIR
    few = toy_pairs(n_pairs=3)
    assert evaluate(few, FaithfulnessConfig(n_resamples=10, random_draws=2)).forward_passes == 3 * (1 + 3 * 10 + 2 * 10)


def test_a_pairs_random_score_is_the_mean_of_its_draws_each_at_every_fraction_and_kind():
    w = np.random.default_rng(4).exponential(size=30)
    pair = PairInput(("n7", "t"), Linear(w), {"exact": w})
    record = evaluate([pair], FaithfulnessConfig(n_resamples=10, random_draws=6, seed=3)).pairs[0]
    ks = [n_kept(30, f) for f in FRACTIONS]
    orders = [ranking(random_draw(30, ("n7", "t"), 3, r)) for r in range(6)]
    assert len({tuple(o) for o in orders}) == 6  # six different rankings
    comprehensiveness = [np.mean([w[o[:k]].sum() for o in orders]) for k in ks]
    sufficiency = [np.mean([w[o[k:]].sum() for o in orders]) for k in ks]
    # sums of the same float64 weights in another order: a few ulps of W (< 1e2 here)
    assert record["random"]["comprehensiveness"] == pytest.approx(comprehensiveness, abs=1e-12)
    assert record["random"]["sufficiency"] == pytest.approx(sufficiency, abs=1e-12)
    assert record["random"]["draws"] == 6
    assert record["random"]["aopc_comprehensiveness"] == pytest.approx(np.mean(comprehensiveness), abs=1e-12)
    # draw 0 is localisation's random baseline, so both measure the same ranking
    from ml.localisation import random_scores

    assert np.array_equal(random_draw(30, ("n7", "t"), 3, 0), random_scores(30, ("n7", "t"), 3))


def test_the_paired_ci_covers_the_known_difference_on_a_linear_toy_and_is_narrower_than_the_unpaired():
    """For F = sum of the kept weights, a random ranking's expected comprehensiveness at k of n
    is k/n x W exactly, so the exact map's true paired difference on these pairs is known."""
    pairs = toy_pairs(n_pairs=150, seed=5)
    for i, p in enumerate(pairs):  # pairs of very different scale: what pairing cancels
        p.scorer.w *= 1 + 3 * (i % 5)
        p.maps["exact"] = p.scorer.w
        p.maps["reversed"] = -p.scorer.w
    summary = evaluate(pairs, FaithfulnessConfig(n_resamples=1000)).summary
    truth = []
    for p in pairs:
        w, n = p.scorer.w, len(p.scorer.w)
        top = np.sort(w)[::-1]
        truth.append(np.mean([top[: n_kept(n, f)].sum() - n_kept(n, f) / n * w.sum() for f in FRACTIONS]))
    paired = summary["methods"]["exact"]["paired"]
    low, high = paired["aopc_comprehensiveness_ci"]
    assert low <= np.mean(truth) <= high and low > 0
    unpaired = summary["methods"]["exact"]["aopc_comprehensiveness_ci"]
    assert high - low < 0.75 * (unpaired[1] - unpaired[0])  # the pairs' scale cancels in part
    v = verdicts(summary)
    assert v["exact"]["comprehensiveness"]["verdict"] == "beats random" and v["exact"]["faithful"]
    assert v["reversed"]["comprehensiveness"]["verdict"] == "worse than random"
    assert v["reversed"]["sufficiency"]["verdict"] == "worse than random"
    assert v["random"]["comprehensiveness"]["verdict"] == "cannot tell"
    assert "contains 0" in v["random"]["comprehensiveness"]["reason"]


class Constant:
    def __call__(self, replace):
        return np.full(len(replace), -2.5)


def test_a_zero_width_interval_or_too_few_pairs_give_no_verdict_and_say_why():
    rng = np.random.default_rng(0)
    flat = [PairInput((f"n{i}", "t"), Constant(), {"m": rng.random(20)}) for i in range(30)]
    summary = evaluate(flat, FaithfulnessConfig(n_resamples=100)).summary
    assert summary["methods"]["m"]["paired"]["aopc_comprehensiveness_ci"] == [0.0, 0.0]
    v = verdicts(summary)["m"]
    assert v["comprehensiveness"]["verdict"] is None and "zero width" in v["comprehensiveness"]["reason"]
    assert not v["comprehensiveness_beats_random"] and not v["faithful"]
    few = evaluate(toy_pairs(n_pairs=9), FaithfulnessConfig(n_resamples=100)).summary
    v = verdicts(few)["exact"]
    assert v["sufficiency"]["verdict"] is None and "9 pairs, fewer than 10" in v["sufficiency"]["reason"]
    assert verdicts(few, min_pairs=5)["exact"]["comprehensiveness"]["verdict"] == "beats random"
    from ml.faithfulness import markdown

    assert "zero width" in markdown(summary)


# ---- a tiny language model ----


@pytest.fixture(scope="module")
def loaded():
    import torch

    torch.set_num_threads(1)  # shared cores
    return build_loaded("llama")


def plain_value(loaded, enc, ids, explained):
    """F of one prompt, the textbook way: the whole logits, log-softmax, the explained ids."""
    import torch

    with torch.no_grad():
        logits = loaded.model(input_ids=torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    n = len(explained)
    return float(sum(logp[len(ids) - n + j, t] for j, t in enumerate(explained)))


@pytest.mark.parametrize("explain", ["next", "target", "span"])
def test_the_batched_scorer_equals_a_plain_loop_one_perturbation_at_a_time(loaded, explain):
    """Tolerance: the batched pass and the plain pass run the same fp32 arithmetic in a
    different order (batched matmuls, logits_to_keep), so each logit may differ by a few
    units of fp32 rounding of its magnitude; a log-probability adds the log-sum-exp, of the
    same magnitude. 64 x eps(fp32) x (1 + max |logit|) per explained token bounds that with a
    wide margin while a wrong token or position (differences >= 1e-2 here) cannot pass."""
    import torch

    config = RelevanceConfig(method="grad_input", explain=explain)
    scorer = ModelScorer(loaded, NOTES[0], "heart rate", config, neutral_id=neutral_token_id(loaded.tokenizer))
    n = scorer.n_tokens
    rng = np.random.default_rng(0)
    replace = rng.random((12, n)) < 0.3
    replace[0] = False
    batched = scorer(replace)
    enc = scorer.enc
    with torch.no_grad():
        full_logits = loaded.model(input_ids=torch.tensor([enc.input_ids])).logits[0]
    explained = enc.task_ids if explain == "span" else [enc.target_id]
    if explain == "next":
        explained = [int(full_logits[-1].argmax())]
    scale = 1 + float(full_logits.abs().max())
    tolerance = 64 * float(np.finfo(np.float32).eps) * scale * len(explained)
    for row, value in zip(replace, batched):
        ids = list(enc.input_ids)
        for i in enc.note_index[row]:
            ids[i] = scorer.neutral_id
        assert abs(value - plain_value(loaded, enc, ids, explained)) <= tolerance


def test_a_hundred_model_pairs_cost_the_map_rows_and_ten_random_draws_each_beyond_the_map(loaded):
    notes = [NOTES[i % 3] for i in range(100)]
    tasks = [("heart rate", "presence of pacemaker", "body temperature", "clinical finding")[i % 4] for i in range(100)]
    keys = [(f"n{i}", t) for i, t in enumerate(tasks)]
    config = RelevanceConfig(method="grad_input")
    maps = {"grad_input": compute_relevance(loaded, notes, tasks, config)}
    rows = []
    handle = loaded.model.register_forward_hook(
        lambda _m, args, kwargs, _o: rows.append(len(kwargs["input_ids"])), with_kwargs=True
    )
    try:
        result = evaluate(model_pairs(loaded, notes, tasks, keys, maps, config), FaithfulnessConfig(n_resamples=50))
    finally:
        handle.remove()
    assert sum(rows) == result.forward_passes == PASSES_PER_PAIR * 100
    # one batched forward call per 32 rows of a pair
    assert len(rows) == result.forward_calls == 100 * -(-PASSES_PER_PAIR // 32)
    summary = result.summary["methods"]["grad_input"]
    assert np.isfinite(summary["aopc_comprehensiveness"]) and len(summary["deletion"]) == len(FRACTIONS)


def attnlrp_faithfulness():
    """In a spawned child: AttnLRP maps (patching the process) scored by the patched model."""
    import torch

    from ml.faithfulness import faithfulness

    torch.set_num_threads(1)
    loaded = build_loaded("llama")
    tasks = ["heart rate", "body temperature"]
    keys = [("a", t) for t in tasks]
    result = faithfulness(loaded, NOTES[:2], tasks, keys, ["attnlrp", "grad_input"], RelevanceConfig(), None)
    return result.forward_passes, result.summary["methods"]


def test_attnlrp_maps_are_scored_beside_grad_input_in_a_patched_process():
    # a child of its own, not the session's patched_child: grad_input is computed before AttnLRP
    # patches the process, and another test may already have patched the shared child
    pool = multiprocessing.get_context("spawn").Pool(1)
    try:
        passes, methods = pool.apply(attnlrp_faithfulness)
    finally:
        pool.terminate()
        pool.join()
    assert passes == 2 * (1 + 2 * 10 + 10 * 10)
    assert list(methods) == ["attnlrp", "grad_input"]
    assert all(np.isfinite(m["aopc_comprehensiveness"]) for m in methods.values())


def test_a_map_of_another_prompt_is_refused(loaded):
    config = RelevanceConfig(method="grad_input")
    maps = {"grad_input": compute_relevance(loaded, [NOTES[1]], ["heart rate"], config)}
    with pytest.raises(ValueError, match="note tokens"):
        model_pairs(loaded, [NOTES[0]], ["heart rate"], [("a", "heart rate")], maps, config)


def test_the_command_prints_one_json_object(tmp_path, capsys):
    import torch

    from ml.__main__ import main

    torch.set_num_threads(1)
    tiny = build_loaded("llama")
    folder = tmp_path / "tiny-llama"
    tiny.model.save_pretrained(folder)
    tiny.tokenizer.save_pretrained(folder)
    notes = tmp_path / "notes.jsonl"
    notes.write_text("".join(json.dumps({"id": f"n{i}", "text": t}) + "\n" for i, t in enumerate(NOTES)))
    argv = ["faithfulness", "--notes", str(notes), "--model", str(folder), "--task", "heart rate"]
    argv += ["--task", "body temperature", "--method", "grad_input", "--method", "attention", "--dtype", "float32"]
    argv += ["--pairs", "5", "--n-resamples", "50", "--device", "cpu", "--random-draws", "2"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["n_pairs"] == 5
    assert set(out["summary"]["methods"]) == {"grad_input", "attention"}
    assert out["forward_passes"] == 5 * (1 + 2 * 10 + 2 * 10)
    assert "pairs" not in out and out["summary"]["random"]["aopc_comprehensiveness_ci"]
    assert out["summary"]["random"]["draws"] == 2 and "paired" in out["summary"]["methods"]["attention"]
    assert out["verdicts"]["attention"]["comprehensiveness"]["reason"] == "no verdict: 5 pairs, fewer than 10"


def test_the_help_names_the_new_options(capsys):
    from ml.__main__ import main

    with pytest.raises(SystemExit):
        main(["faithfulness", "--help"])
    out = capsys.readouterr().out
    assert "--random-draws" in out and "--min-pairs" in out


def test_the_verdict_and_table_say_which_ranking_beats_random():
    from ml.faithfulness import markdown, verdicts

    summary = evaluate(toy_pairs(n_pairs=120), FaithfulnessConfig(n_resamples=200)).summary
    verdict = verdicts(summary)
    assert verdict["exact"]["faithful"] and not verdict["reversed"]["comprehensiveness_beats_random"]
    table = markdown(summary)
    rows = {line.split(" | ")[0].strip("| "): line for line in table.splitlines() if line.startswith("| ")}
    assert rows["exact"].endswith("| both |") and rows["reversed"].endswith("| no |")
    assert "random (10 draws a pair)" in rows and "120 pairs" in table
