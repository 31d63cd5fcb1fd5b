import pytest

from tests.webapp.erasure.world import make_world


@pytest.fixture
def world(admin_user, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return make_world(admin_user, data_dir=tmp_path)
