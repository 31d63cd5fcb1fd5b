"""scripts/time_demo.py: its reading of the demo's output, and its whole run (clone, the make
steps, watching, stopping, the JSON) against a stand-in repository whose Makefile prints what the
real demo prints, in seconds. The real timing is run by hand on an idle machine (README)."""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import time_demo  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# Lines as rundemo, the Celery workers and the relevance worker's model cache write them.
DEMO_OUTPUT = [
    (2.0, "Database ready (sqlite3).\n"),
    (9.5, "Job 1: 30 prompts in 15 chunks, queued (configuration attnlrp-next-4b92cd8a51).\n"),
    (10.0, "\x1b[32;1m\nDecSelfMask Studio is running at http://127.0.0.1:8123/  (Ctrl+C stops it)\n"),
    (21.0, "[2026-12-02 07:00:01,000: INFO/MainProcess] cpu@host ready.\n"),
    (22.0, "[2026-12-02 07:00:02,000: INFO/MainProcess] relevance@host ready.\n"),
    (29.0, "[2026-12-02 07:00:09,000: INFO/MainProcess] loaded model smollm2-135m-instruct on cpu (torch.bfloat16)\n"),
    (30.0, "[2026-12-02 07:00:10,000: INFO/MainProcess] relevance@host ready.\n"),  # a second one: the first counts
    (81.0, "First relevance job done in 80 s (job 1: 30 of 30 prompts, since the demo started).\n"),
]


def test_it_reads_serving_worker_model_and_first_job_times_from_the_demos_output():
    timeline = time_demo.Timeline()
    for seconds, line in DEMO_OUTPUT:
        timeline.see(seconds, line)
    assert (timeline.serving, timeline.first_job, timeline.first_job_status) == (10.0, 81.0, "done")
    assert timeline.milestones == {"cpu_worker_ready": 21.0, "relevance_worker_ready": 22.0, "model_loaded": 29.0}
    assert timeline.ended


def test_a_failed_first_job_is_read_as_failed_and_nothing_before_it_ends_the_watch():
    timeline = time_demo.Timeline()
    for seconds, line in DEMO_OUTPUT[:-1]:
        timeline.see(seconds, line)
    assert not timeline.ended
    timeline.see(90.0, "First relevance job failed in 89 s (job 1: 12 of 30 prompts, since the demo started).")
    assert timeline.ended and timeline.first_job_status == "failed"


def test_the_demo_runs_without_the_callers_database_folders_or_threads(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://x/y")
    monkeypatch.setenv("DATA_DIR", "/elsewhere")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    env = time_demo.clean_env(pip_cache=True)
    assert not {"DATABASE_URL", "DATA_DIR", "OMP_NUM_THREADS"} & set(env)
    assert env["PYTHONUNBUFFERED"] == "1" and "PIP_NO_CACHE_DIR" not in env
    assert time_demo.clean_env(pip_cache=False)["PIP_NO_CACHE_DIR"] == "1"


FAKE_MAKEFILE = """\
PORT ?= 8000
install:
\t@test -z "$$DATABASE_URL" && test -z "$$DATA_DIR" && test ! -d var
\t@sleep 0.2; mkdir -p .venv
model:
\t@sleep 0.2; mkdir -p var/models
demo:
\t@echo "Database ready (sqlite3)."
\t@echo "DecSelfMask Studio is running at http://127.0.0.1:$(PORT)/  (Ctrl+C stops it)"
\t@echo "[t: INFO/MainProcess] relevance@host ready."
\t@sleep 0.5; echo "First relevance job done in 1 s (job 1: 30 of 30 prompts, since the demo started)."
\t@sleep 300
"""


def fake_repo(folder: Path, makefile: str) -> Path:
    folder.mkdir()
    (folder / "Makefile").write_text(makefile)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "--quiet", str(folder)], check=True)
    subprocess.run([*git, "-C", str(folder), "add", "Makefile"], check=True)
    subprocess.run([*git, "-C", str(folder), "commit", "--quiet", "-m", "stand-in"], check=True)
    return folder


def run_script(source: Path, *args) -> tuple[subprocess.CompletedProcess, dict]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "time_demo.py"), "--source", str(source), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, json.loads(done.stdout.strip().splitlines()[-1])


def test_it_clones_runs_each_step_stops_the_demo_and_prints_one_json_object(tmp_path):
    started = time.monotonic()
    done, result = run_script(fake_repo(tmp_path / "source", FAKE_MAKEFILE), "--timeout", "60")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert time.monotonic() - started < 60  # the demo's `sleep 300` was stopped once the job was done
    assert result["ok"] is True and result["first_job_status"] == "done"
    for key in ("install_s", "model_conversion_s", "seeding_s", "first_job_s"):
        assert 0 <= result[key] < 30, key
    assert result["install_s"] >= 0.2 and result["first_job_s"] >= 0.4
    assert result["total_s"] >= result["install_s"] + result["model_conversion_s"] + result["seeding_s"]
    assert "relevance_worker_ready" in result["milestones_s"]
    assert len(result["load_average_start"]) == len(result["load_average_end"]) == 3
    assert result["cpus"] >= 1 and result["pip_cache"].startswith("on (") and len(result["commit"]) == 40
    assert "kept" not in result


def test_a_demo_whose_first_job_never_ends_is_reported_with_its_log(tmp_path):
    makefile = FAKE_MAKEFILE.replace('echo "First relevance job done', 'echo "still working')
    done, result = run_script(fake_repo(tmp_path / "source", makefile), "--timeout", "3")
    assert done.returncode == 1 and result["ok"] is False
    assert "did not end within 3 s" in result["error"]
    log = Path(result["log"]).read_text()
    assert "DecSelfMask Studio is running at" in log
    shutil.rmtree(result["kept"])
