"""`python -m benchmarks deid`, small: its JSON has the figures per type, the speed and the machine."""

import json

from benchmarks import deid


def test_the_deid_benchmark_reports_recall_speed_and_machine(tmp_path, capsys):
    # no shared data in tmp_path: the demo notes, and the Spanish filler
    assert deid.main(["--notes", "4", "--sources", "demo", "--data", str(tmp_path), "--no-relevance"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["notes_by_source"] == {"demo:it": 4, "demo:en": 4, "filler:es": 4}
    recall = out["overall"]["recall"]
    assert {"NAME:metadata", "NAME:titled", "DATE"} <= set(recall)
    assert recall["NAME:metadata"]["target"] == 0.97 and recall["NAME:titled"]["target"] == 0.85
    assert all(0 <= v["recall"] <= v["overlap_recall"] <= 1 for v in recall.values())
    assert recall["ADDRESS"]["target"] == 0.95 and "ADDRESS" not in out["not_detected_types"]  # a measured type now
    assert out["allow_listed_terms"] > 0 and out["allow_listed_terms_replaced"] == 0
    assert out["speed"]["notes_per_second"] > 0 and out["speed"]["notes_per_cpu_second"] > 0
    assert "load_average_1_5_15" in out["machine"] and "relevance" not in out
    assert 0 <= out["notes_with_identifier_left_share"] <= 1
