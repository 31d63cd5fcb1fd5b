"""Peak profiles belong to projects (issue 37): a profile a clinician of project B saved was
offered, with B's name for it, in project A's forms. Each existing profile goes to the project that
used it (a dataset, an evaluation, a review round or a review decision of that project's corpora),
copied where several did, each project's rows then naming its own copy; one no project used goes
to the projects of the user who saved it (copied likewise). The default profile and those saved
by nobody (the paper's, made by a migration) or by a user of no project stay shared."""

from django.db import migrations

USES = (  # (app, model, path from the row to its project)
    ("datasets", "DatasetVersion", "corpus__project"),
    ("evaluation", "RelevanceEvaluation", "corpus__project"),
    ("review", "ReviewRound", "corpus__project"),
    ("review", "PeakDecision", "note__corpus__project"),
)


def to_projects(apps, schema_editor):
    PeakProfile = apps.get_model("pipeline", "PeakProfile")
    Membership = apps.get_model("projects", "Membership")
    users = [apps.get_model(app, model) for app, model, _ in USES]
    for profile in PeakProfile.objects.filter(is_default=False).order_by("pk"):
        used = set()
        for (_, _, path), Model in zip(USES, users):
            used |= set(Model.objects.filter(profile=profile).values_list(path, flat=True).distinct())
        used.discard(None)
        if not used and profile.created_by_id is not None:
            used = set(Membership.objects.filter(user_id=profile.created_by_id).values_list("project_id", flat=True))
        if not used:
            continue
        first, *others = sorted(used)
        PeakProfile.objects.filter(pk=profile.pk).update(project_id=first)
        for project_id in others:
            copy = PeakProfile.objects.get(pk=profile.pk)
            copy.pk, copy.project_id = None, project_id
            copy.save()
            PeakProfile.objects.filter(pk=copy.pk).update(created=profile.created)
            for (_, _, path), Model in zip(USES, users):
                Model.objects.filter(profile=profile, **{path: project_id}).update(profile=copy)


class Migration(migrations.Migration):
    dependencies = [
        ("pipeline", "0008_peak_profile_project"),
        ("projects", "0002_existing_data"),
        ("datasets", "0004_lifecycle"),
        ("evaluation", "0004_released_evaluations"),
        ("review", "0009_validation_verdicts"),
    ]

    operations = [migrations.RunPython(to_projects, migrations.RunPython.noop)]
