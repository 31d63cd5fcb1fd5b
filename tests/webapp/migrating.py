"""Migration tests: move the test database to an old schema, write rows with the models of that
schema, then move it forward. Test functions using these need django_db(transaction=True)."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone


def migrate(targets):
    """Migrate to targets; return the historical apps of the whole database as it then is (every
    applied migration of every app, not only the targets' ancestors, so rows written through
    them fit the tables of apps that stayed ahead)."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(targets)
    if plan and all(backwards for _, backwards in plan):
        _unapply(executor, plan)
    else:
        executor.migrate(targets, plan=plan)
    executor.loader.build_graph()  # re-read which migrations are applied
    applied, graph = executor.loader.applied_migrations, executor.loader.graph
    leaves = [
        key for key in applied if key in graph.nodes and not any(c.key in applied for c in graph.node_map[key].children)
    ]
    return executor.loader.project_state(leaves).apps


def _unapply(executor, plan):
    """Django's backwards migration, with the migrations that stay applied put before those it
    unapplies in the order it computes the states from.

    Django renders the project state at the first migration to unapply and then, for every later
    migration in its order, applied or not to be unapplied, changes that rendered state, which
    re-renders most models each time (the apps' models are closely related): for an early target,
    a hundred migrations of other apps that stay applied, at a tenth of a second each. Those never
    depend on a migration being unapplied (it would be unapplied with it), so running them first
    is still an order the graph allows; they are then applied to the state before it is rendered,
    which is cheap. The state each migration is unapplied from also matches the database better:
    it has every migration that stays applied, as the tables do. The same operations run, in the
    same order, against the same tables."""
    leaving = {migration for migration, _ in plan}
    full_plan = executor.migration_plan(executor.loader.graph.leaf_nodes(), clean_start=True)
    staying_first = [step for step in full_plan if step[0] not in leaving] + [
        step for step in full_plan if step[0] in leaving
    ]
    executor.recorder.ensure_schema()
    executor._migrate_all_backwards(plan, staying_first, fake=False)
    executor.check_replacements()


def migrate_to_latest():
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def database_now():
    """Now, truncated to the millisecond: SQLite's clock in a migration (Now()) has no finer grain,
    so a stamp written after this call is never earlier than it."""
    now = timezone.now()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def make_corpus(old, **fields):
    """A corpus through the historical models `old`; in the test project when the corpus table of
    that state has its project column (the corpus app stayed ahead of the app being migrated)."""
    corpus_model = old.get_model("corpus", "Corpus")
    if any(field.name == "project" for field in corpus_model._meta.fields):
        project_model = old.get_model("projects", "Project")
        fields["project"] = project_model.objects.get_or_create(slug="test-project", defaults={"name": "Test project"})[
            0
        ]
    return corpus_model.objects.create(**fields)
