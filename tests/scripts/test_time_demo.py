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
    (21.0, "[2026-12-02 07:00:01,000: INFO/MainProcess] default@host ready.\n"),
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
    assert timeline.milestones == {"default_worker_ready": 21.0, "relevance_worker_ready": 22.0, "model_loaded": 29.0}
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


STALL_S = 300  # the stand-in demo's wait after its first job: the script must stop it, not wait
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
\t@sleep {STALL_S} & echo $$! > "$(STALL_PID)"; sleep 0.5; \\
\t  echo "First relevance job done in 1 s (job 1: 30 of 30 prompts, since the demo started)."; wait
"""


FAKE_MAKEFILE = FAKE_MAKEFILE.replace("{STALL_S}", str(STALL_S))


def ends_before(pid: int, seconds: float) -> bool:
    """True once the process is gone (or a zombie its parent left); False if alive after `seconds`,
    a fraction of the stall, so only a demo left running fails, however loaded the machine."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


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
    stall_pid = tmp_path / "stall.pid"
    makefile = FAKE_MAKEFILE.replace("$(STALL_PID)", str(stall_pid))
    done, result = run_script(fake_repo(tmp_path / "source", makefile), "--timeout", "60")
    assert done.returncode == 0, (done.stdout, done.stderr)
    # The demo's stall (`sleep 300`) was stopped once the job was done, not waited for: on order and
    # state, not on seconds, so a loaded machine cannot fail it.
    assert result["ok"] is True and result["first_job_status"] == "done"
    assert ends_before(int(stall_pid.read_text()), STALL_S / 5)
    for key in ("install_s", "model_conversion_s", "seeding_s", "first_job_s"):
        assert 0 <= result[key] <= result["total_s"], key
    assert result["install_s"] >= 0.2 and result["first_job_s"] >= 0.4
    assert result["total_s"] >= result["install_s"] + result["model_conversion_s"] + result["seeding_s"]
    assert "relevance_worker_ready" in result["milestones_s"]
    assert len(result["load_average_start"]) == len(result["load_average_end"]) == 3
    assert result["cpus"] >= 1 and result["pip_cache"].startswith("on (") and len(result["commit"]) == 40
    assert "kept" not in result


def test_a_demo_whose_first_job_never_ends_is_reported_with_its_log(tmp_path):
    makefile = FAKE_MAKEFILE.replace('echo "First relevance job done', 'echo "still working').replace(
        "$(STALL_PID)", str(tmp_path / "stall.pid")
    )
    done, result = run_script(fake_repo(tmp_path / "source", makefile), "--timeout", "3")
    assert done.returncode == 1 and result["ok"] is False
    assert "did not end within 3 s" in result["error"]
    log = Path(result["log"]).read_text()
    assert "DecSelfMask Studio is running at" in log
    shutil.rmtree(result["kept"])
