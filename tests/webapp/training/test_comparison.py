"""Comparison tables against hand-computed values (F1 x 100, deltas before rounding)."""

import pytest

from ml.metrics import mean_task_f1, paired_bootstrap
from webapp.training.comparison import (
    ItemPredictions,
    RunRow,
    paired_difference,
    paired_rows,
    paired_table,
    reference_pairs,
    table2,
    table3,
    table4,
    tables,
)
from webapp.training.configs import diff, flatten


def ci(estimate, low=None, high=None):
    return {"estimate": estimate, "low": low, "high": high}


def row(run_id, adaptation, origin, base="qwen3-8b", macro=None, per_task=None, held=(), held_macro=None, split=1):
    return RunRow(
        run_id=run_id,
        adaptation=adaptation,
        origin=origin,
        base_model=base,
        macro=macro,
        per_task=per_task or {},
        held_out_tasks=tuple(held),
        held_out_macro=held_macro,
        split_id=split,
    )


PAPER = [  # Qwen3-8B in Table 2: SFT 32.5 -> 40.4, CH 52.5 -> 60.3
    row(1, "SFT", "base", macro=ci(0.325)),
    row(2, "SFT", "dsm", macro=ci(0.404)),
    row(3, "CH", "base", macro=ci(0.525)),
    row(4, "CH", "dsm", macro=ci(0.603)),
]


def test_table2_puts_base_and_dsm_side_by_side_with_their_deltas():
    table = table2(PAPER)
    assert table.columns == ["Model", "SFT base", "SFT DSM", "SFT Δ", "CH base", "CH DSM", "CH Δ"]
    assert table.rows == [["qwen3-8b", 32.5, 40.4, 7.9, 52.5, 60.3, 7.8]]


def test_table2_computes_deltas_before_rounding():
    # 32.54 -> 32.5 and 40.46 -> 40.5 would give 8.0; the exact delta is 7.92 -> 7.9
    table = table2([row(1, "CH", "base", macro=ci(0.3254)), row(2, "CH", "dsm", macro=ci(0.4046))])
    assert table.rows == [["qwen3-8b", None, None, None, 32.5, 40.5, 7.9]]


def test_table2_has_one_row_per_base_model_and_leaves_missing_cells_empty():
    rows = PAPER + [
        row(5, "CH", "base", base="llama3-1b", macro=ci(0.341)),
        row(6, "CH", "dsm", base="llama3-1b", macro=ci(0.470)),
    ]
    table = table2(rows)
    assert [r[0] for r in table.rows] == ["llama3-1b", "qwen3-8b"]
    assert table.rows[0] == ["llama3-1b", None, None, None, 34.1, 47.0, 12.9]


def test_the_latest_run_fills_a_cell_chosen_twice():
    rows = [
        row(7, "CH", "base", macro=ci(0.50)),
        row(3, "CH", "base", macro=ci(0.40)),
        row(9, "CH", "dsm", macro=ci(0.55)),
    ]
    assert table2(rows).rows == [["qwen3-8b", None, None, None, 50.0, 55.0, 5.0]]


def test_table3_lists_held_out_tasks_and_their_macro_f1():
    rows = [
        row(
            1,
            "CH",
            "base",
            per_task={"a": 0.9, "t1": 0.5, "t2": 0.6},
            held=("t1", "t2"),
            held_macro=ci(0.55),
            macro=ci(0.7),
        ),
        row(
            2,
            "CH",
            "dsm",
            per_task={"a": 0.9, "t1": 0.55, "t2": 0.58},
            held=("t1", "t2"),
            held_macro=ci(0.565),
            macro=ci(0.72),
        ),
    ]
    table = table3(rows)
    assert table.columns == ["Held-out task", "qwen3-8b CH base", "qwen3-8b CH DSM", "qwen3-8b CH Δ"]
    assert table.rows == [
        ["t1", 50.0, 55.0, 5.0],
        ["t2", 60.0, 58.0, -2.0],
        ["Macro F1 (held-out tasks)", 55.0, 56.5, 1.5],
    ]


def test_table3_is_empty_without_held_out_tasks():
    assert table3(PAPER).rows == []


def test_table4_follows_the_papers_order_with_confidence_intervals():
    rows = [
        row(10, "CH", "dsm", macro=ci(0.603, 0.571, 0.634)),
        row(11, "0-shot", "base", macro=ci(0.277, 0.25, 0.30)),
        row(12, "CH", "random", macro=ci(0.564, 0.53, 0.60)),
        row(13, "CH", "cpt", macro=ci(0.540, 0.51, 0.57)),
        row(14, "self-learning SFT", "base", macro=ci(0.478, 0.45, 0.51)),
        row(15, "CH", "sft", macro=ci(0.5, 0.4, 0.6)),  # not a paper system: listed after them
    ]
    table = table4(rows)
    assert table.columns == ["Model", "System", "Macro F1", "95% CI low", "95% CI high", "Run"]
    assert [r[1] for r in table.rows] == [
        "0-shot",
        "CPT + CH",
        "synthetic-label self-learning SFT",
        "random mask + CH",
        "DSM + CH",
        "SFT model + CH",
    ]
    assert table.rows[4] == ["qwen3-8b", "DSM + CH", 60.3, 57.1, 63.4, 10]


def test_tables_export_as_csv_with_one_decimal_and_empty_cells():
    csv_text = table2([row(1, "CH", "base", macro=ci(0.5)), row(2, "CH", "dsm", macro=ci(0.6049))]).to_csv()
    assert csv_text.splitlines() == ["Model,SFT base,SFT DSM,SFT Δ,CH base,CH DSM,CH Δ", "qwen3-8b,,,,50.0,60.5,10.5"]


def test_every_table_is_built_even_from_no_rows():
    assert {key: t.rows for key, t in tables([]).items()} == {"2": [], "3": [], "4": []}


def test_config_diff_lists_only_what_differs_in_key_order():
    a = flatten({"train": {"lr": 4e-5, "epochs": 1.0, "finetune": "full", "max_steps": None}})
    b = flatten({"train": {"lr": 3e-4, "epochs": 1, "finetune": "lora", "max_steps": None}})
    assert diff(a, b) == [("train.finetune", "full", "lora"), ("train.lr", 4e-5, 3e-4)]


def test_config_diff_shows_a_setting_only_one_side_has():
    assert diff({"seed": 0, "x.a": 1}, {"seed": 0}) == [("x.a", 1, None)]
    assert diff({"x": True}, {"x": 1}) == [("x", True, 1)]  # a boolean is not a number here


# ------------------------------------------------------------------------ paired differences

ITEMS = tuple((note, task) for note in range(1, 21) for task in ("hr", "pm"))
GOLD = tuple("y" if (note + (task == "pm")) % 3 else "n" for note, task in ITEMS)
TASKS = tuple(task for _, task in ITEMS)


def predictions(wrong=(), split=1, items=ITEMS, gold=GOLD, variants=1):
    """Right on every item but those at the positions in `wrong` (the same for every variant)."""
    flipped = tuple({"y": "n", "n": "y"}[g] if i in wrong else g for i, g in enumerate(gold))
    return ItemPredictions(split, items, gold, tuple(task for _, task in items), (flipped,) * variants)


def test_a_run_is_paired_with_the_base_model_run_of_its_system_by_default():
    rows = [
        row(1, "SFT", "base"),
        row(2, "SFT", "dsm"),
        row(3, "CH", "base"),
        row(4, "CH", "dsm"),
        row(5, "CH", "random"),
        row(6, "CH", "base", base="llama3-1b"),
        row(7, "CH", "dsm", base="llama3-1b"),
    ]
    pairs = [(label, r.run_id, ref_label, ref.run_id) for label, r, ref_label, ref in reference_pairs(rows)]
    assert pairs == [
        ("DSM + CH", 7, "base + CH", 6),  # llama3-1b first (alphabetical), with its own base run
        ("base + CH", 3, "base + SFT", 1),  # no other base + CH of qwen3-8b: the first qwen3-8b run
        ("random mask + CH", 5, "base + CH", 3),
        ("DSM + SFT", 2, "base + SFT", 1),
        ("DSM + CH", 4, "base + CH", 3),
    ]  # base + CH of llama3-1b and base + SFT of qwen3-8b are first of their model: no pair of their own


def test_a_chosen_reference_is_the_reference_of_every_run():
    rows = [row(1, "SFT", "base"), row(3, "CH", "base"), row(4, "CH", "dsm")]
    pairs = [(r.run_id, ref.run_id) for _, r, _, ref in reference_pairs(rows, reference_id=4)]
    assert pairs == [(1, 4), (3, 4)]
    assert [(r.run_id, ref.run_id) for _, r, _, ref in reference_pairs(rows, reference_id=99)] == [(3, 1), (4, 3)]


def test_the_paired_difference_is_the_paired_bootstrap_of_the_two_runs():
    base, dsm = predictions(wrong=range(0, 40, 3)), predictions(wrong=range(0, 40, 9))
    result, reason = paired_difference(base, dsm, n_resamples=300)
    assert reason == ""
    assert result == paired_bootstrap(
        list(GOLD), list(base.variants[0]), list(dsm.variants[0]), mean_task_f1, 300, groups=list(TASKS)
    )
    assert result.diff == pytest.approx(
        mean_task_f1(GOLD, dsm.variants[0], TASKS) - mean_task_f1(GOLD, base.variants[0], TASKS)
    )
    assert result.diff > 0 and result.low <= result.diff <= result.high and result.n == 40


def test_variants_are_averaged_as_the_run_reports_them():
    prompting = ItemPredictions(1, ITEMS, GOLD, TASKS, (predictions(wrong=range(10)).variants[0], GOLD))
    result, _ = paired_difference(predictions(), prompting, n_resamples=50)
    assert result.diff == pytest.approx((mean_task_f1(GOLD, prompting.variants[0], TASKS) - 1.0) / 2)


def test_runs_on_different_splits_or_items_are_not_paired():
    base = predictions()
    assert paired_difference(base, predictions(split=2)) == (None, "not paired: different splits (split 1 vs split 2)")
    assert paired_difference(predictions(split=None), predictions(split=None))[0] is None
    fewer = predictions(items=ITEMS[:30], gold=GOLD[:30])
    assert paired_difference(base, fewer) == (None, "not paired: different test items (30 vs 40, 30 in common)")
    relabelled = predictions(gold=("y",) * 40)
    assert paired_difference(base, relabelled)[1].startswith("not paired: different test items")
    empty = ItemPredictions(1)
    assert paired_difference(base, empty, other_id=8) == (None, "not paired: run 8 has no stored test predictions")
    broken = ItemPredictions(1, ITEMS, GOLD, TASKS, base.variants, complete=False)
    assert paired_difference(broken, base, reference_id=3)[1] == (
        "not paired: run 3 has predictions missing for some items"
    )


def test_paired_rows_load_each_run_once_and_export_as_csv():
    rows = [
        row(1, "CH", "base", macro=ci(0.7)),
        row(2, "CH", "dsm", macro=ci(0.9)),
        row(3, "CH", "random", macro=ci(0.8), split=2),
    ]
    stored = {1: predictions(wrong=range(0, 40, 4)), 2: predictions(wrong=range(0, 40, 20)), 3: predictions(split=2)}
    loads = []

    def load(r):
        loads.append(r.run_id)
        return stored[r.run_id]

    paired = paired_rows(rows, load=load, n_resamples=200)
    assert sorted(loads) == [1, 2, 3]
    assert [(p.label, p.reference.run_id, p.paired) for p in paired] == [
        ("random mask + CH", 1, False),
        ("DSM + CH", 1, True),
    ]
    result = paired[1].result
    lines = paired_table(paired).to_csv().splitlines()
    assert lines[0] == (
        "Model,System,Run,Reference,Reference run,Macro F1,Reference Macro F1,Δ Macro F1,"
        "Δ 95% CI low,Δ 95% CI high,p,Items,Pairing"
    )
    assert lines[1] == (
        "qwen3-8b,random mask + CH,3,base + CH,1,80.0,70.0,,,,,,not paired: different splits (split 1 vs split 2)"
    )
    assert lines[2] == (
        f"qwen3-8b,DSM + CH,2,base + CH,1,90.0,70.0,{100 * result.diff:.1f},{100 * result.low:.1f},"
        f"{100 * result.high:.1f},{result.p_value:.3f},40,paired"
    )
    assert 0 < result.low and result.p_value < 0.05


def test_a_difference_on_few_items_is_given_without_ci_or_p_value():
    few = ITEMS[:8]
    gold = GOLD[:8]
    base, dsm = predictions(wrong=(0, 1, 2), items=few, gold=gold), predictions(items=few, gold=gold)
    stored = {1: base, 2: dsm}
    rows = [row(1, "CH", "base", macro=ci(0.6)), row(2, "CH", "dsm", macro=ci(1.0))]
    (line,) = paired_rows(rows, load=lambda r: stored[r.run_id], n_resamples=100)
    assert line.paired and not line.has_ci and line.result.n == 8
    assert paired_table([line]).to_csv().splitlines()[1] == (
        f"qwen3-8b,DSM + CH,2,base + CH,1,100.0,60.0,{100 * line.result.diff:.1f},,,,8,"
        "paired; fewer than 10 items: no CI or p-value"
    )
