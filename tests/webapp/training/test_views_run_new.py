"""The launch form: presets fill the paper's values, every setting is editable and validated."""
from django.urls import reverse

from webapp.audit.models import AuditEvent
from webapp.training.models import TrainingRun


def form_data(response):
    """The form's initial values as POST data (what a browser would submit unchanged)."""
    form = response.context["form"]
    data = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if value is None:
            continue
        if field.widget.input_type == "checkbox":
            if value:
                data[name] = "on"
            continue
        data[name] = getattr(value, "pk", value)
    return data


def test_the_form_offers_every_preset_and_starts_from_dsm_full(client, researcher, dataset):
    client.force_login(researcher)
    response = client.get(reverse("training:run_new"))
    html = response.content.decode()
    for label in ("DSM full (paper)", "CPT", "random mask", "one peak", "LoRA SFT (paper)", "CH (paper)", "0-shot",
                  "2-shot", "self-learning"):
        assert label in html
    form = response.context["form"]
    assert form["train__lr"].value() == 4e-5 and form["train__effective_batch_size"].value() == 128
    assert "split_corpus" not in form.fields


def test_a_preset_switches_the_kind_and_its_settings(client, researcher, db):
    client.force_login(researcher)
    form = client.get(reverse("training:run_new") + "?preset=ch").context["form"]
    assert form["heads__epochs"].value() == 20 and "dataset" not in form.fields and "train__lr" not in form.fields
    form = client.get(reverse("training:run_new") + "?preset=one-peak").context["form"]
    assert form["train__epochs"].value() == 5.0


def test_launching_with_edited_settings_stores_them_and_audits(client, researcher, dataset):
    client.force_login(researcher)
    data = form_data(client.get(reverse("training:run_new")))
    data.update(dataset=dataset.pk, train__max_steps=4, train__finetune="lora", name="dsm smoke")
    response = client.post(reverse("training:run_new"), data)
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("training:run_detail", args=[run.pk])
    assert (run.name, run.kind, run.preset) == ("dsm smoke", "dsm", "dsm-full")
    assert run.config["train"]["max_steps"] == 4 and run.config["train"]["finetune"] == "lora"
    assert run.config["train"]["lr"] == 4e-5
    assert AuditEvent.objects.filter(action=AuditEvent.Action.LAUNCH_JOB, actor=researcher).exists()


def test_a_labeled_run_splits_the_chosen_corpus(client, admin_user, corpus):
    client.force_login(admin_user)
    data = form_data(client.get(reverse("training:run_new") + "?preset=ch"))
    data.update(split_corpus=corpus.pk, split_seed=2)
    response = client.post(reverse("training:run_new"), data)
    assert response.status_code == 302
    run = TrainingRun.objects.get()
    assert run.kind == "heads" and run.split.corpus == corpus and run.split.seed == 2


def test_bad_settings_are_shown_on_their_fields_and_nothing_is_launched(client, researcher, dataset):
    client.force_login(researcher)
    data = form_data(client.get(reverse("training:run_new")))
    data.update(dataset=dataset.pk, train__lr="0", train__effective_batch_size="10")
    response = client.post(reverse("training:run_new"), data)
    form = response.context["form"]
    assert response.status_code == 200 and not TrainingRun.objects.exists()
    assert form.errors["train__lr"] == ["The learning rate must be greater than 0."]
    assert "multiple of the micro-batch size" in form.errors["train__effective_batch_size"][0]


def test_a_dataset_of_the_wrong_mode_is_refused_by_the_random_mask_preset(client, researcher, dataset):
    client.force_login(researcher)
    data = form_data(client.get(reverse("training:run_new") + "?preset=random-mask"))
    data.update(dataset=dataset.pk)
    response = client.post(reverse("training:run_new"), data)
    assert "built in mode Random mask" in response.context["form"].errors["dataset"][0]


def test_a_labeled_run_needs_a_split_or_a_corpus(client, researcher, db):
    client.force_login(researcher)
    data = form_data(client.get(reverse("training:run_new") + "?preset=sft"))
    response = client.post(reverse("training:run_new"), data)
    assert "Choose the labeled split" in response.context["form"].errors["split"][0]


def test_a_trained_model_can_be_preselected(client, researcher, model_version):
    from webapp.pipeline.models import ModelVersion

    trained = ModelVersion.objects.create(name="tiny+dsm", family="llama", path="/m", parent=model_version)
    client.force_login(researcher)
    form = client.get(reverse("training:run_new") + f"?preset=ch&model={trained.pk}").context["form"]
    assert form["model_version"].value() == trained.pk
