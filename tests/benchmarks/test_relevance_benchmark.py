"""The relevance benchmark's comparison runs its three paths on the same prompts (tiny model, in
the patched child: it applies AttnLRP)."""

import json

from tests.ml.conftest import build_loaded


def child_compare(tasks_per_note, rounds=1):
    from benchmarks.relevance import compare

    ours, base = build_loaded("llama"), build_loaded("llama")  # the same fp32 weights (fixed seed)
    return compare(ours, base, 6, 60, tasks_per_note=tasks_per_note, rounds=rounds)


def test_the_benchmark_reports_the_naive_loop_the_product_path_and_the_shared_prefix(patched_child):
    result = patched_child.apply(child_compare, (3,))
    assert set(result["paths"]) == {"naive_lxt_loop", "product", "shared_prefix"}
    for path in result["paths"].values():
        assert path["prompts_per_s"] > 0 and path["seconds"] > 0 and path["vs_naive"] > 0
    assert result["paths"]["naive_lxt_loop"]["vs_naive"] == 1.0
    assert result["shared_vs_product"] > 0 and result["tasks_per_note"] == 3
    assert result["load_average"]["before"] >= 0 and result["load_average"]["cores"] >= 1
    assert result["agreement_pearson"] > 0.999  # same weights, same dtype: the same maps
    assert result["default_path"] == "shared_prefix"  # the CPU's default
    assert result["prompts_per_s"] == result["paths"]["shared_prefix"]["prompts_per_s"] and json.dumps(result)


def test_one_task_per_note_keeps_the_two_path_comparison(patched_child):
    result = patched_child.apply(child_compare, (1,))
    assert set(result["paths"]) == {"naive_lxt_loop", "ours"} and "shared_vs_product" not in result
    assert {"prompts_per_s", "baseline_prompts_per_s", "speedup"} <= set(result)


def test_the_paths_run_interleaved_forwards_then_backwards_each_round():
    from benchmarks.relevance import interleaved, order

    assert order(["a", "b", "c"], 2) == ["a", "b", "c", "c", "b", "a", "a", "b", "c", "c", "b", "a"]
    ran = []
    runs = {name: (lambda name=name: ran.append(name) or name) for name in "abc"}
    times, outputs = interleaved(runs, 2, lambda run: (run(), 1.0, 0.5))
    assert "".join(ran) == "abccbaabccba" and outputs == {"a": "a", "b": "b", "c": "c"}
    assert times["b"] == [(1.0, 0.5)] * 4


def test_each_path_reports_its_best_and_median_over_the_rounds_and_the_cpu_flags(patched_child):
    result = patched_child.apply(child_compare, (3, 2))
    assert result["rounds"] == 2
    assert result["order_of_a_round"] == ["naive_lxt_loop", "product", "shared_prefix"] * 1 + [
        "shared_prefix",
        "product",
        "naive_lxt_loop",
    ]
    for path in result["paths"].values():
        assert len(path["seconds_each"]) == 4
        assert path["seconds"] == min(path["seconds_each"]) <= path["seconds_median"] <= max(path["seconds_each"])
        assert path["prompts_per_s"] >= path["prompts_per_s_median"] > 0
    assert result["speedup"] == result["paths"]["shared_prefix"]["vs_naive"]
    assert set(result["machine"]["cpu_flags"]) == {"avx2", "avx512f", "avx512_bf16", "amx_bf16"}
