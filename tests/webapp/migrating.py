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
    """Django's backwards migration (MigrationExecutor._migrate_all_backwards: the same operations,
    unapplied in the same order by unapply_migration), with the project states before each
    migration computed without rendering them.

    Django renders the state at the first migration to unapply and then changes it for every later
    migration in its order, the applied ones of other apps that stay included; each change of a
    rendered state re-renders most models (the apps' models are closely related), a tenth of a
    second each, and unapplying a migration changes the state again the same way. Here the states
    are built as plain model descriptions, which is cheap, and each operation renders only the
    states its database step reads. The migrations that stay applied come first: none depends on
    one being unapplied (it would be unapplied with it), so that is an order the graph allows, and
    the state each migration is unapplied from then has every migration the tables still have, as
    Django's forward migration does."""
    leaving = {migration for migration, _ in plan}
    graph = executor.loader.graph
    full_plan = executor.migration_plan(graph.leaf_nodes(), clean_start=True)
    applied = {graph.nodes[key] for key in executor.loader.applied_migrations if key in graph.nodes}
    state = executor._create_project_state()
    states = {}
    for migration in [m for m, _ in full_plan if m not in leaving] + [m for m, _ in full_plan if m in leaving]:
        if migration in leaving:
            states[migration] = state
            state = migration.mutate_state(state, preserve=True)
        elif migration in applied:
            migration.mutate_state(state, preserve=False)
    executor.recorder.ensure_schema()
    for migration, _ in plan:
        executor.unapply_migration(states[migration], migration)
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
