"""The de-identification settings fail loudly: a DEID_MAPPING_KEY that is not a Fernet key (the
message never repeats it) and a DEID_BATCH under 1 stop the app at start; keys comma-separated
(rotation) are each checked."""

from cryptography.fernet import Fernet

from tests.webapp.test_settings import run_with_env

KEY_PROBE = "import django; django.setup(); from django.conf import settings; print(settings.DEID_MAPPING_KEY)"


def test_a_mapping_key_that_is_not_a_fernet_key_stops_the_app_without_showing_it():
    result = run_with_env({"DEID_MAPPING_KEY": "hunter2-not-a-key"})
    assert result.returncode != 0
    assert "DEID_MAPPING_KEY is not a Fernet key" in result.stderr
    assert "hunter2" not in result.stderr


def test_rotated_keys_are_each_checked():
    new, old = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    assert run_with_env({"DEID_MAPPING_KEY": f"{new}, {old}"}, KEY_PROBE).returncode == 0
    assert run_with_env({"DEID_MAPPING_KEY": f"{new},nope"}).returncode != 0


def test_a_batch_under_one_stops_the_app():
    result = run_with_env({"DEID_BATCH": "0"})
    assert result.returncode != 0 and "DEID_BATCH=0 must be at least 1" in result.stderr
