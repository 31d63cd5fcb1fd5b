"""Corpus names are unique within a project instead of site-wide (issue 37): a name another project
uses is free here, so "this name is taken" never confirms another project's corpus. Existing names
are unique site-wide, so they are unique per project too."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0012_project_required"),
        ("projects", "0002_existing_data"),
    ]

    operations = [
        migrations.AlterField(
            model_name="corpus",
            name="name",
            field=models.CharField(help_text="Unique within its project", max_length=200),
        ),
        migrations.AddConstraint(
            model_name="corpus",
            constraint=models.UniqueConstraint(fields=("project", "name"), name="corpus_corpus_name_per_project"),
        ),
    ]
