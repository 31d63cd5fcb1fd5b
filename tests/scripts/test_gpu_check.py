"""scripts/gpu_check.py --smoke: the GPU check's every step on the CPU with tiny models, run as
the GPU machine would run it (a subprocess printing one JSON object)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RELEVANCE_PARTS = ("relevance_default_model", "relevance_1b")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return tmp_path_factory.mktemp("gpu-check") / "gpu_check.json"


@pytest.fixture(scope="module")
def smoke(saved):
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "scripts/gpu_check.py", "--smoke", "--threads", "1", "--out", str(saved)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.mark.slow
def test_the_smoke_run_prints_one_json_object_with_every_part_and_passes(smoke):
    rc, report, stderr = smoke
    assert rc == 0, stderr[-2000:]
    assert (report["device"], report["smoke"], report["torch_threads"], report["all_checks_passed"]) == (
        "cpu",
        True,
        1,
        True,
    )
    for part in (*RELEVANCE_PARTS, "maps_match_cpu", "oom_backoff", "training", "features"):
        assert part in report and not report[part].get("error"), (part, report[part])
    assert 0 < report["seconds"] < 300


@pytest.mark.slow
def test_the_smoke_relevance_figures_are_measured_against_the_naive_loop(smoke):
    _, report, _ = smoke
    for part in RELEVANCE_PARTS:
        figures = report[part]
        assert figures["prompts_per_s"] > 0 and figures["naive_prompts_per_s"] > 0
        ratio = figures["naive_prompts_per_s"] and figures["prompts_per_s"] / figures["naive_prompts_per_s"]
        assert figures["speedup"] == pytest.approx(ratio, rel=0.05)
        assert figures["batch_size"] == 1 and figures["parameters"] > 0
        assert figures["agreement_pearson"] > 0.99  # the same weights, explained the same way
    assert report["relevance_1b"]["parameters"] > report["relevance_default_model"]["parameters"]


@pytest.mark.slow
def test_the_smoke_maps_match_the_cpu_path_and_gpu_only_figures_are_null_with_a_reason(smoke):
    _, report, _ = smoke
    maps = report["maps_match_cpu"]
    assert maps["pass"] and maps["same_explained_token"] >= 1
    assert maps["pearson_min"] >= maps["tolerance"]["pearson_min"]
    assert maps["max_abs_diff_normalised"] <= maps["tolerance"]["max_abs_diff_normalised"]
    assert report["oom_backoff"]["forced"] is None and "CUDA" in report["oom_backoff"]["reason"]
    for part in (*RELEVANCE_PARTS, "training", "features"):
        assert report[part]["peak_gpu_mem_mb"] is None and "CUDA" in report[part]["peak_gpu_mem_reason"]


@pytest.mark.slow
def test_the_smoke_training_and_features_figures_are_sane(smoke):
    _, report, _ = smoke
    training, features = report["training"], report["features"]
    assert training["accelerate"] and training["ours_tokens_per_s"] > 0 and training["trainer_tokens_per_s"] > 0
    assert training["steps"] == 2 and training["ours_mean_loss"] > 0
    assert features["items_per_s"] > 0 and features["items"] == features["notes"] * features["tasks_per_note"]
    assert features["max_abs_difference"] < 1e-3  # shared prefix == one forward per item


@pytest.mark.slow
def test_the_smoke_run_skips_the_sharded_step_and_says_why(smoke):
    _, report, _ = smoke
    sharded = report["sharded_training"]
    assert sharded["pass"] is None and "needs 2 GPUs" in sharded["skipped"] and "--sharded" in sharded["skipped"]


@pytest.mark.slow
def test_the_sharded_step_trains_on_two_cpu_processes_checkpoints_and_gathers_a_loadable_folder():
    """The GPU machine's sharded step (`--smoke --sharded`): its ranks' code, on gloo."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_check

    report = gpu_check._sharded_training(gpu_check.SMOKE, True, True)
    assert report["pass"] and report["processes"] == 2 and report["steps"] == gpu_check.SMOKE.sharded_steps
    assert report["checkpoints_saved_at"] == [1] and report["final_folder_loads"] and report["weights_changed"]
    assert report["tokens_per_s"] > 0 and report["planned_gb_per_gpu"] > 0
    assert report["peak_gpu_mem_mb_per_rank"] == [None, None]


@pytest.mark.slow
def test_the_report_is_also_saved_whole_and_the_relevance_parts_as_they_end(smoke, saved):
    _, report, _ = smoke
    assert json.loads(saved.read_text()) == report
    relevance = json.loads(saved.with_name(saved.name + ".relevance.json").read_text())
    assert set(relevance) == {"relevance_default_model", "relevance_1b", "maps_match_cpu", "oom_backoff"}
    assert relevance["maps_match_cpu"] == report["maps_match_cpu"]
    assert not list(saved.parent.glob(".*.tmp"))  # written atomically, nothing left behind
