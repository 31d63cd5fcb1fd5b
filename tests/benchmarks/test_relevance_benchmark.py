"""The relevance benchmark's comparison runs its three paths on the same prompts (tiny model, in
the patched child: it applies AttnLRP)."""

import json

from tests.ml.conftest import build_loaded


def child_compare(tasks_per_note):
    from benchmarks.relevance import compare

    ours, base = build_loaded("llama"), build_loaded("llama")  # the same fp32 weights (fixed seed)
    return compare(ours, base, 6, 60, tasks_per_note=tasks_per_note)


def test_the_benchmark_reports_the_naive_loop_the_product_path_and_the_shared_prefix(patched_child):
    result = patched_child.apply(child_compare, (3,))
    assert set(result["paths"]) == {"naive_lxt_loop", "product", "shared_prefix"}
    for path in result["paths"].values():
        assert path["prompts_per_s"] > 0 and path["seconds"] > 0 and path["vs_naive"] > 0
    assert result["paths"]["naive_lxt_loop"]["vs_naive"] == 1.0
    assert result["shared_vs_product"] > 0 and result["tasks_per_note"] == 3
    assert result["load_average"]["before"] >= 0 and result["load_average"]["cores"] >= 1
    assert result["agreement_pearson"] > 0.999  # same weights, same dtype: the same maps
    assert result["prompts_per_s"] == result["paths"]["shared_prefix"]["prompts_per_s"] and json.dumps(result)


def test_one_task_per_note_keeps_the_two_path_comparison(patched_child):
    result = patched_child.apply(child_compare, (1,))
    assert set(result["paths"]) == {"naive_lxt_loop", "ours"} and "shared_vs_product" not in result
    assert {"prompts_per_s", "baseline_prompts_per_s", "speedup"} <= set(result)
