"""docker-compose.yml is the documented deployment: it parses and names what the operations guide
(docs/operations.md, linked from README) promises.
(No Docker engine runs here, so the file is checked, not started.)"""

import re
import shlex
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
README = (ROOT / "docs" / "operations.md").read_text()  # compose is documented there


def test_it_defines_every_service_the_readme_documents():
    services = set(COMPOSE["services"])
    assert {"postgres", "redis", "migrate", "web", "worker-cpu", "worker-gpu", "worker-train", "flower"} <= services
    for name in services:
        assert f"`{name}`" in README, f"service {name} is not documented in README"


def test_every_documented_volume_exists_and_is_used():
    volumes = set(COMPOSE["volumes"])
    assert volumes == {"pgdata", "redisdata", "models", "data"}
    for name in volumes:
        assert f"`{name}`" in README
    used = {v.split(":")[0] for s in COMPOSE["services"].values() for v in s.get("volumes", [])}
    assert volumes <= used


def test_app_services_share_one_image_and_differ_only_in_command():
    app = [s for n, s in COMPOSE["services"].items() if n not in ("postgres", "redis")]
    assert {s["image"] for s in app} == {"decselfmask-studio:latest"}
    assert all(s["build"] == "." for s in app)
    assert len({" ".join(s["command"]) for s in app}) == len(app)
    assert (ROOT / "Dockerfile").exists()


def test_workers_listen_on_the_documented_queues():
    def queues(name):
        cmd = COMPOSE["services"][name]["command"]
        return set(cmd[cmd.index("--queues") + 1].split(","))

    assert queues("worker-cpu") == {"default"}
    assert queues("worker-gpu") == {"relevance"}
    assert queues("worker-train") == {"training"}
    assert queues("worker-outbound") == {"webhooks"}  # no receiver delays the default queue


def test_exactly_one_beat_sends_the_periodic_rounds():
    beats = [name for name, service in COMPOSE["services"].items() if "beat" in service.get("command", [])]
    assert beats == ["beat"]
    assert "deploy" not in COMPOSE["services"]["beat"]  # never replicated: each replica would send them again


def test_every_worker_is_restarted_when_it_dies():
    """A worker that a broker outage or the OOM killer ends comes back by itself."""
    workers = [name for name in COMPOSE["services"] if name.startswith("worker-")]
    assert len(workers) == 4
    for name in workers:
        assert COMPOSE["services"][name]["restart"] == "unless-stopped", name
    gpu = COMPOSE["services"]["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia" and "gpu" in gpu["capabilities"]


def test_web_runs_gunicorn_against_the_wsgi_app():
    # A shell runs it so that WEB_WORKERS and WEB_THREADS from .env size it; `exec` leaves
    # gunicorn as the container's main process, so a stop's SIGTERM reaches it.
    shell, flag, line = COMPOSE["services"]["web"]["command"]
    words = shlex.split(line)
    assert (shell, flag) == ("sh", "-c") and words[:3] == ["exec", "gunicorn", "webapp.wsgi:application"]
    # `$$` is compose's escape: the container's shell, not compose, reads the variables.
    assert words[words.index("--workers") + 1] == "$${WEB_WORKERS:-3}"
    assert words[words.index("--threads") + 1] == "$${WEB_THREADS:-1}"
    assert re.search(r"\b8000:8000\b", " ".join(COMPOSE["services"]["web"]["ports"]))


def test_app_services_point_at_postgres_and_redis():
    env = COMPOSE["services"]["web"]["environment"]
    assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
    assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0"
    assert env["DSM_EMBEDDED"] == "0"


def test_the_database_log_quotes_no_statement_nor_row():
    command = COMPOSE["services"]["postgres"]["command"]
    settings = dict(command[i + 1].split("=", 1) for i, word in enumerate(command) if word == "-c")
    assert command[0] == "postgres"
    assert settings["log_min_error_statement"] == "panic" and settings["log_error_verbosity"] == "terse"
    assert "log_min_error_statement=panic" in README and "log_error_verbosity=terse" in README
