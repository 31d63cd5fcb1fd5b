"""Settings read from the environment: embedded default without URLs, real services with them."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import json, django; django.setup(); from django.conf import settings as s;"
    "db = s.DATABASES['default'];"
    "print(json.dumps({'engine': db['ENGINE'], 'name': str(db['NAME']), 'host': db.get('HOST', ''),"
    " 'broker': s.CELERY_BROKER_URL, 'opts': s.CELERY_BROKER_TRANSPORT_OPTIONS, 'debug': s.DEBUG,"
    " 'hosts': s.ALLOWED_HOSTS, 'data_dir': str(s.DATA_DIR), 'model_dir': str(s.MODEL_DIR)}))"
)
CLEARED = [
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "DEBUG",
    "ALLOWED_HOSTS",
    "DATA_DIR",
    "MODEL_DIR",
    "DSM_EMBEDDED",
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "DJANGO_SETTINGS_MODULE",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
    "RELEVANCE_SHARE_PREFIX",
    "REVIEW_CATALOG_SECONDS",
]


def run_with_env(extra: dict, code: str = PROBE) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(extra)
    env["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)


def probe(extra: dict) -> dict:
    result = run_with_env(extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_with_nothing_set_it_uses_sqlite_and_the_filesystem_broker_under_data_dir(tmp_path):
    conf = probe({"DATA_DIR": str(tmp_path)})
    assert conf["engine"] == "django.db.backends.sqlite3"
    assert conf["name"] == str(tmp_path / "db.sqlite3")
    assert conf["broker"] == "filesystem://"
    folders = {k: v for k, v in conf["opts"].items() if k.endswith("_folder") or k.startswith("data_folder")}
    assert set(folders) >= {"data_folder_in", "data_folder_out", "processed_folder", "control_folder"}
    assert all(v.startswith(str(tmp_path)) for v in folders.values())  # nothing written into the cwd
    assert conf["debug"] is False


def test_with_urls_set_it_uses_postgresql_and_redis():
    conf = probe({"DATABASE_URL": "postgres://u:p@db.internal:5432/dsm", "REDIS_URL": "redis://cache:6379/2"})
    assert conf["engine"] == "django.db.backends.postgresql"
    assert conf["name"] == "dsm"
    assert conf["host"] == "db.internal"
    assert conf["broker"] == "redis://cache:6379/2"
    assert conf["opts"]["visibility_timeout"] >= 3600


def test_an_explicit_broker_url_wins_over_redis_url():
    conf = probe({"CELERY_BROKER_URL": "redis://broker:6379/0", "REDIS_URL": "redis://cache:6379/2"})
    assert conf["broker"] == "redis://broker:6379/0"


def test_model_dir_data_dir_and_hosts_come_from_the_environment(tmp_path):
    conf = probe({"MODEL_DIR": str(tmp_path / "m"), "DATA_DIR": str(tmp_path / "d"), "ALLOWED_HOSTS": "a.org, b.org"})
    assert conf["model_dir"] == str(tmp_path / "m")
    assert conf["data_dir"] == str(tmp_path / "d")
    assert conf["hosts"] == ["a.org", "b.org"]


def test_a_bad_boolean_fails_loudly():
    result = run_with_env({"DEBUG": "maybe"})
    assert result.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in result.stderr


@pytest.mark.parametrize("value, expected", [(None, None), ("auto", None), ("1", True), ("off", False)])
def test_the_share_prefix_setting_is_auto_unless_told(value, expected):
    extra = {} if value is None else {"RELEVANCE_SHARE_PREFIX": value}
    code = (
        "import json, django; django.setup(); from django.conf import settings as s;"
        "print(json.dumps(s.RELEVANCE_SHARE_PREFIX))"
    )
    result = run_with_env(extra, code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) is expected


def test_a_bad_share_prefix_setting_fails_loudly():
    result = run_with_env({"RELEVANCE_SHARE_PREFIX": "sometimes"})
    assert result.returncode != 0
    assert "RELEVANCE_SHARE_PREFIX='sometimes' is not auto or a boolean" in result.stderr


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("LAUNCH_CONFIRM_SECONDS", "ten minutes", "LAUNCH_CONFIRM_SECONDS='ten minutes' is not an integer"),
        ("LAUNCH_CONFIRM_AMOUNT", "-1", "must be 0 (always confirm) or positive"),
        ("REVIEW_CATALOG_SECONDS", "-1", "REVIEW_CATALOG_SECONDS=-1 must be 0 (no copy) or a number of seconds"),
    ],
)
def test_a_bad_launch_confirmation_threshold_fails_loudly(name, value, message):
    result = run_with_env({name: value})
    assert result.returncode != 0
    assert message in result.stderr


def test_production_without_a_secret_key_refuses_to_start():
    result = run_with_env({"DSM_EMBEDDED": "0", "DEBUG": "0"})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_settings_pass_check_deploy_with_no_warnings(tmp_path):
    env = {
        "DEBUG": "0",
        "DSM_EMBEDDED": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "dsm.example.org",
        "DATA_DIR": str(tmp_path),
    }
    code = (
        "import sys; from django.core.management import execute_from_command_line;"
        "execute_from_command_line(['manage.py', 'check', '--deploy', '--fail-level', 'WARNING'])"
    )
    result = run_with_env(env, code)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize("debug", ["1"])
def test_debug_settings_do_fail_check_deploy(debug, tmp_path):
    """The check itself is live: development settings are reported."""
    code = (
        "from django.core.management import execute_from_command_line;"
        "execute_from_command_line(['manage.py', 'check', '--deploy', '--fail-level', 'WARNING'])"
    )
    result = run_with_env({"DEBUG": debug, "DATA_DIR": str(tmp_path)}, code)
    assert result.returncode != 0
