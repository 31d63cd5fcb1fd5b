"""Migrations 0008 and 0009: each existing peak profile goes to the project that used it, copied where
several did (each project's rows then name its own copy); one no project used goes to the projects
of the user who saved it; the default profile and one saved by nobody stay shared."""

import pytest

from tests.webapp.migrating import migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds

BEFORE = [("pipeline", "0007_released_chunks")]


@pytest.mark.django_db(transaction=True)
def test_each_profile_goes_to_the_projects_that_used_it():
    old = migrate(BEFORE)
    get = old.get_model
    Project, Corpus, Profile = get("projects", "Project"), get("corpus", "Corpus"), get("pipeline", "PeakProfile")
    cardio = Project.objects.create(name="Cardiology", slug="cardio")
    onco = Project.objects.create(name="Oncology", slug="onco")
    corpora = {p.slug: Corpus.objects.create(project=p, name=f"{p.slug}-notes", language="en") for p in (cardio, onco)}
    model = get("pipeline", "ModelVersion").objects.create(name="base", family="llama", path="base")
    clara = get("auth", "User").objects.create(username="clara")
    get("projects", "Membership").objects.create(project=onco, user=clara, role="clinician")
    both = Profile.objects.create(name="both", version=1, kernel_size=5)
    cardio_only = Profile.objects.create(name="cardio-only", version=1)
    unused = Profile.objects.create(name="clara-tuned", version=1, created_by=clara)
    nobody = Profile.objects.create(name="paper-ish", version=1)
    default = Profile.objects.filter(is_default=True).first() or Profile.objects.create(name="paper", is_default=True)
    Profile.objects.filter(pk=default.pk).update(created_by=clara)  # saved by a member, still shared
    Round = get("review", "ReviewRound")
    rounds = {
        slug: Round.objects.create(
            corpus=corpus, model_version=model, profile=both, method="lrp", template="t", name=f"{slug} round", k=1
        )
        for slug, corpus in corpora.items()
    }
    get("datasets", "DatasetVersion").objects.create(
        name="cardio-ds", corpus=corpora["cardio"], model_version=model, profile=cardio_only
    )

    migrate_to_latest()

    from webapp.pipeline.models import PeakProfile
    from webapp.review.models import ReviewRound

    copies = {p.project.slug: p for p in PeakProfile.objects.filter(name="both").select_related("project")}
    assert set(copies) == {"cardio", "onco"} and copies["cardio"].pk != copies["onco"].pk
    assert copies["onco"].kernel_size == 5
    for slug, rnd in rounds.items():
        assert ReviewRound.objects.get(pk=rnd.pk).profile_id == copies[slug].pk
    assert PeakProfile.objects.get(pk=cardio_only.pk).project.slug == "cardio"
    assert PeakProfile.objects.get(pk=unused.pk).project.slug == "onco"
    assert PeakProfile.objects.get(pk=nobody.pk).project is None
    assert PeakProfile.objects.get(pk=default.pk).project is None
