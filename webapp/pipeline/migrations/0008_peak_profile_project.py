"""Peak profiles belong to projects (issue 37): the column and the per-project uniqueness of a
name's versions; 0009 gives the existing profiles their projects."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("pipeline", "0007_released_chunks"),
        ("projects", "0002_existing_data"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="peakprofile", name="pipeline_peakprofile_name_version"),
        migrations.AddField(
            model_name="peakprofile",
            name="project",
            field=models.ForeignKey(
                blank=True,
                help_text="The project that saved it; none: shared by every project",
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="peak_profiles",
                to="projects.project",
            ),
        ),
        migrations.AddConstraint(
            model_name="peakprofile",
            constraint=models.UniqueConstraint(
                condition=models.Q(("project__isnull", False)),
                fields=("project", "name", "version"),
                name="pipeline_peakprofile_name_version_per_project",
            ),
        ),
        migrations.AddConstraint(
            model_name="peakprofile",
            constraint=models.UniqueConstraint(
                condition=models.Q(("project__isnull", True)),
                fields=("name", "version"),
                name="pipeline_peakprofile_name_version",
            ),
        ),
    ]
