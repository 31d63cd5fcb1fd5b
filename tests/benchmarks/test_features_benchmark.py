"""The features / scoring benchmark runs and its two loops agree (random model: fast)."""

import json

from benchmarks import features


def test_the_features_benchmark_compares_equal_outputs(tmp_path):
    result = features.run(notes=2, tasks=3, note_tokens=80, model_dir=tmp_path, threads=1)
    assert result["items"] == 6 and result["model"].startswith("random Llama")
    assert result["max_abs_difference"] < 1e-4
    assert result["speedup"] > 0 and json.dumps(result)


def test_the_scoring_benchmark_compares_equal_scores(tmp_path):
    result = features.run_scoring(notes=2, tasks=3, note_tokens=80, model_dir=tmp_path, threads=1, unshared=True)
    assert result["sequences"] >= 2 * result["items"]
    assert result["max_abs_difference"] < 1e-2  # log-likelihood sums over several tokens
    assert {"by_note_items_per_s", "per_item_items_per_s", "nothing_shared_items_per_s"} <= set(result)
