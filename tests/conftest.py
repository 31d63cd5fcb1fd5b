"""Shared fixtures: users of each role, logged-in clients."""

import pytest

PASSWORD = "correct-horse-battery-staple"


def _make_user(django_user_model, username, role=None, **extra):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username=username, password=PASSWORD, **extra)
    if role:
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
    return user


@pytest.fixture
def clinician(db, django_user_model):
    return _make_user(django_user_model, "clara", "clinician")


@pytest.fixture
def researcher(db, django_user_model):
    return _make_user(django_user_model, "rita", "researcher")


@pytest.fixture
def admin_user(db, django_user_model):
    return _make_user(django_user_model, "ada", "admin", is_staff=True)


@pytest.fixture
def norole_user(db, django_user_model):
    return _make_user(django_user_model, "nobody")


@pytest.fixture
def client_for(client):
    """client_for(user) -> a test client logged in as that user."""

    def login(user):
        client.force_login(user)
        return client

    return login


def pytest_report_header(config):
    """Say which database and broker the run uses, so CI output shows the real services."""
    import os

    from django.conf import settings

    db = settings.DATABASES["default"]
    # host/name: the name tells concurrent runs apart (TEST_RUN in the Makefile).
    where = f"{db['ENGINE'].rsplit('.', 1)[-1]} " + (
        f"{db['HOST']}/{db['NAME']}" if db.get("HOST") else str(db["NAME"])
    )
    return [f"database: {where}", f"broker: {os.environ.get('REDIS_URL') or settings.CELERY_BROKER_URL}"]
