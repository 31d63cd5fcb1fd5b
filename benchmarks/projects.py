"""The project benchmark and drill data goes in (made on first use), so their corpora are owned
like any other and a site's users never see them unless made members."""

SLUG = "benchmarks"


def default_project():
    from webapp.projects.models import Project

    return Project.objects.get_or_create(slug=SLUG, defaults={"name": "Benchmarks and drills"})[0]


def member(user, role: str):
    """Give a benchmark's user `role` in the benchmark project (roles are per project)."""
    from webapp.accounts.membership import add_member

    add_member(default_project(), user, role)
    return user
