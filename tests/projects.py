"""The project most tests work in: the user fixtures (tests/conftest.py) are its members, and
objects a test makes go in it unless the test is about another project."""

DEFAULT_SLUG = "test-project"


def default_project():
    from webapp.projects.models import Project

    return Project.objects.get_or_create(slug=DEFAULT_SLUG, defaults={"name": "Test project"})[0]


def make_member(user, role: str, project=None):
    from webapp.projects.models import Membership
    from webapp.projects.roles import forget_roles

    Membership.objects.get_or_create(project=project or default_project(), user=user, role=role)
    forget_roles(user)
    return user
