"""The projects, objects and tokens the API's tests use (tests/webapp/api/conftest.py): project A's
corpus (`own`), project B with one of everything (`other`), and tokens made as the page makes them."""

from tests.webapp.api.conftest import bearer, make_token, other, own  # noqa: F401 - fixtures
