"""The projects and objects the API's tests use (tests/webapp/api/conftest.py): project A's corpus
(`own`) and project B with one of everything (`other`)."""

from tests.webapp.api.conftest import other, own  # noqa: F401 - fixtures
