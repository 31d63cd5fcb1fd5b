"""`make demo`'s preparation on the embedded default: SQLite and the filesystem broker, no server."""
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_demo_prepares_sqlite_users_catalog_corpus_and_queues_a_first_job(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")}
    env.update({"DEBUG": "1", "DATA_DIR": str(tmp_path)})
    result = subprocess.run([sys.executable, "manage.py", "rundemo", "--no-serve", "--notes", "25"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "Database ready (sqlite3)" in out
    assert "Notes imported into 'demo-ed': 25 created" in out
    for role in ("clinician", "researcher", "admin"):
        assert f"  {role}" in out  # each demo user is printed with a password
    assert "Job 1: 100 prompts in 10 chunks, queued (configuration attnlrp-next-" in out
    db = sqlite3.connect(tmp_path / "db.sqlite3")
    assert db.execute("select count(*) from corpus_task").fetchone()[0] == 134
    assert db.execute("select status, total from pipeline_relevancejob").fetchall() == [("queued", 100)]
    # the chunks wait in the embedded broker's folder for the relevance worker
    assert len(list((tmp_path / "broker" / "queue").iterdir())) == 10

    again = subprocess.run([sys.executable, "manage.py", "rundemo", "--no-serve", "--notes", "25"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "25 unchanged" in again.stdout and "Job " not in again.stdout  # idempotent
