"""Comparison tables against hand-computed values (F1 x 100, deltas before rounding)."""
from webapp.training.comparison import RunRow, table2, table3, table4, tables
from webapp.training.configs import diff, flatten


def ci(estimate, low=None, high=None):
    return {"estimate": estimate, "low": low, "high": high}


def row(run_id, adaptation, origin, base="qwen3-8b", macro=None, per_task=None, held=(), held_macro=None):
    return RunRow(run_id=run_id, adaptation=adaptation, origin=origin, base_model=base, macro=macro,
                  per_task=per_task or {}, held_out_tasks=tuple(held), held_out_macro=held_macro)


PAPER = [  # Qwen3-8B in Table 2: SFT 32.5 -> 40.4, CH 52.5 -> 60.3
    row(1, "SFT", "base", macro=ci(0.325)), row(2, "SFT", "dsm", macro=ci(0.404)),
    row(3, "CH", "base", macro=ci(0.525)), row(4, "CH", "dsm", macro=ci(0.603)),
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
    rows = PAPER + [row(5, "CH", "base", base="llama3-1b", macro=ci(0.341)),
                    row(6, "CH", "dsm", base="llama3-1b", macro=ci(0.470))]
    table = table2(rows)
    assert [r[0] for r in table.rows] == ["llama3-1b", "qwen3-8b"]
    assert table.rows[0] == ["llama3-1b", None, None, None, 34.1, 47.0, 12.9]


def test_the_latest_run_fills_a_cell_chosen_twice():
    rows = [row(7, "CH", "base", macro=ci(0.50)), row(3, "CH", "base", macro=ci(0.40)),
            row(9, "CH", "dsm", macro=ci(0.55))]
    assert table2(rows).rows == [["qwen3-8b", None, None, None, 50.0, 55.0, 5.0]]


def test_table3_lists_held_out_tasks_and_their_macro_f1():
    rows = [
        row(1, "CH", "base", per_task={"a": 0.9, "t1": 0.5, "t2": 0.6}, held=("t1", "t2"), held_macro=ci(0.55),
            macro=ci(0.7)),
        row(2, "CH", "dsm", per_task={"a": 0.9, "t1": 0.55, "t2": 0.58}, held=("t1", "t2"), held_macro=ci(0.565),
            macro=ci(0.72)),
    ]
    table = table3(rows)
    assert table.columns == ["Held-out task", "qwen3-8b CH base", "qwen3-8b CH DSM", "qwen3-8b CH Δ"]
    assert table.rows == [["t1", 50.0, 55.0, 5.0], ["t2", 60.0, 58.0, -2.0],
                          ["Macro F1 (held-out tasks)", 55.0, 56.5, 1.5]]


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
    assert [r[1] for r in table.rows] == ["0-shot", "CPT + CH", "synthetic-label self-learning SFT",
                                          "random mask + CH", "DSM + CH", "SFT model + CH"]
    assert table.rows[4] == ["qwen3-8b", "DSM + CH", 60.3, 57.1, 63.4, 10]


def test_tables_export_as_csv_with_one_decimal_and_empty_cells():
    csv_text = table2([row(1, "CH", "base", macro=ci(0.5)), row(2, "CH", "dsm", macro=ci(0.6049))]).to_csv()
    assert csv_text.splitlines() == ["Model,SFT base,SFT DSM,SFT Δ,CH base,CH DSM,CH Δ",
                                     "qwen3-8b,,,,50.0,60.5,10.5"]


def test_every_table_is_built_even_from_no_rows():
    assert {key: t.rows for key, t in tables([]).items()} == {"2": [], "3": [], "4": []}


def test_config_diff_lists_only_what_differs_in_key_order():
    a = flatten({"train": {"lr": 4e-5, "epochs": 1.0, "finetune": "full", "max_steps": None}})
    b = flatten({"train": {"lr": 3e-4, "epochs": 1, "finetune": "lora", "max_steps": None}})
    assert diff(a, b) == [("train.finetune", "full", "lora"), ("train.lr", 4e-5, 3e-4)]


def test_config_diff_shows_a_setting_only_one_side_has():
    assert diff({"seed": 0, "x.a": 1}, {"seed": 0}) == [("x.a", 1, None)]
    assert diff({"x": True}, {"x": 1}) == [("x", True, 1)]  # a boolean is not a number here
