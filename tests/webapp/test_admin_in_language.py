"""Django's admin speaks the reader's language too: every model it lists names itself, its plural and
each of its fields with a translatable verbose name (Django translates the admin's own words), so an
Italian or Spanish site admin reads the app's names in their language; the fields' help texts are
translatable too."""

import pytest
from django.contrib import admin
from django.utils.functional import Promise

ADMIN_MODELS = [model for model in admin.site._registry if model.__module__.startswith("webapp.")]
INLINE_MODELS = [
    inline.model
    for model_admin in admin.site._registry.values()
    if type(model_admin).__module__.startswith("webapp.")
    for inline in model_admin.inlines
]


def test_the_admin_lists_the_apps_models():
    labels = {model._meta.label for model in ADMIN_MODELS}
    assert {"corpus.Corpus", "training.TrainingRun", "review.PeakDecision", "audit.AuditEvent"} <= labels
    assert {"training.RunLog", "pipeline.RelevanceChunk"} <= {model._meta.label for model in INLINE_MODELS}


@pytest.mark.parametrize("model", ADMIN_MODELS + INLINE_MODELS, ids=lambda model: model._meta.label)
def test_every_admin_model_and_field_has_a_translatable_name(model):
    """Lazy strings (gettext_lazy), never a plain one nor Django's default made from the name; the
    help texts too."""
    assert isinstance(model._meta.verbose_name, Promise), f"{model._meta.label}: verbose_name"
    assert isinstance(model._meta.verbose_name_plural, Promise), f"{model._meta.label}: verbose_name_plural"
    fields = [f for f in model._meta.get_fields() if (f.concrete or f.many_to_many) and not f.auto_created]
    plain = [f.name for f in fields if not isinstance(f.verbose_name, Promise)]
    assert not plain, f"{model._meta.label}: fields without a translatable verbose_name: {plain}"
    plain_help = [f.name for f in fields if f.help_text and not isinstance(f.help_text, Promise)]
    assert not plain_help, f"{model._meta.label}: fields whose help text is not translatable: {plain_help}"
    for field in fields:
        for _value, label in field.flatchoices if field.choices else ():
            # a one-word label is a name (AttnLRP, JSONL, Parquet), the same in every language
            assert isinstance(label, Promise) or " " not in label, f"{model._meta.label}.{field.name}: {label!r}"


def test_the_apps_of_the_admin_name_themselves_in_words_to_translate():
    from django.apps import apps

    for model in ADMIN_MODELS:
        config = apps.get_app_config(model._meta.app_label)
        assert isinstance(config.verbose_name, Promise), config.label


@pytest.fixture
def admin_client(client, django_user_model, settings):
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.org", "x" * 12))
    return client


# Needs the catalogs with this file's strings (issue 42's merge of the helpers' translations).
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("lang", "words"),
    [
        (
            "it",
            [
                "Famiglia",
                "Percorso",
                "Modello di partenza",
                "Addestramenti",
                "Registro delle attività",
                "Note cliniche",
            ],
        ),
        ("es", ["Familia", "Ruta", "Modelo de partida", "Entrenamientos", "Registro de auditoría", "Notas clínicas"]),
    ],
)
def test_a_changelist_names_its_model_and_columns_in_the_readers_language(admin_client, lang, words):
    """The model versions' list (its columns: the fields' names) and the index (the apps' and models' names)."""
    from webapp.pipeline.models import ModelVersion

    ModelVersion.objects.create(name="tiny-base", family="llama", path="tiny-base")
    page = admin_client.get("/admin/pipeline/modelversion/", HTTP_ACCEPT_LANGUAGE=lang, secure=True)
    assert page.status_code == 200 and page["Content-Language"] == lang
    assert "tiny-base" in page.content.decode()  # a row, so the columns are shown
    index = admin_client.get("/admin/", HTTP_ACCEPT_LANGUAGE=lang, secure=True).content.decode()
    html = page.content.decode() + index
    missing = [word for word in words if word not in html]
    assert not missing, f"not in the {lang} admin: {missing}"
    english = ["Family", "Parent model", "Training runs", "Audit log", "Clinical notes"]
    assert not [word for word in english if word in html]
