import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """Every corpus and import job belongs to a project (projects 0002 put today's rows in one)."""

    dependencies = [
        ("corpus", "0011_project"),
        ("projects", "0002_existing_data"),
    ]

    operations = [
        migrations.AlterField(
            model_name="corpus",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="corpora", to="projects.project"
            ),
        ),
        migrations.AlterField(
            model_name="importjob",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="import_jobs", to="projects.project"
            ),
        ),
    ]
