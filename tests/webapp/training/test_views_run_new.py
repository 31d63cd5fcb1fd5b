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
    for label in (
        "DSM full (paper)",
        "CPT",
        "random mask",
        "one peak",
        "LoRA SFT (paper)",
        "CH (paper)",
        "0-shot",
        "2-shot",
        "self-learning",
    ):
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
    data.update(dataset=dataset.pk, train__max_steps=4, train__finetune="lora", name="dsm smoke", train__warmup_ratio=0)
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


def test_every_bad_field_is_reported_at_once_each_beside_its_field_once(client, researcher, dataset):
    from django.utils.html import escape

    client.force_login(researcher)
    data = form_data(client.get(reverse("training:run_new")))
    data.pop("dataset", None)  # none chosen
    data.update(train__lr="-1", train__micro_batch_size="0", train__max_steps="-5")
    response = client.post(reverse("training:run_new"), data)
    errors = response.context["form"].errors
    assert set(errors) == {"dataset", "train__lr", "train__micro_batch_size", "train__max_steps"}
    assert errors["dataset"] == ["Choose the dataset version to train on."]
    assert errors["train__lr"] == ["The learning rate must be greater than 0."]
    assert errors["train__max_steps"] == ["The maximum steps must be at least 1."]
    html = response.content.decode()
    for (message,) in errors.values():
        assert html.count(escape(message)) == 1, message
    assert not TrainingRun.objects.exists()


def test_a_setting_that_does_not_read_does_not_hide_the_other_problems(client, researcher, dataset):
    client.force_login(researcher)
    data = form_data(client.get(reverse("training:run_new")))
    data.update(dataset=dataset.pk, train__lr="fast", train__micro_batch_size="0")
    errors = client.post(reverse("training:run_new"), data).context["form"].errors
    assert set(errors) == {"train__lr", "train__micro_batch_size"}


def test_the_batch_multiple_problem_is_said_once_beside_the_effective_batch_size(client, researcher, dataset):
    client.force_login(researcher)
    data = form_data(client.get(reverse("training:run_new")))
    data.update(dataset=dataset.pk, train__effective_batch_size="10")
    response = client.post(reverse("training:run_new"), data)
    form = response.context["form"]
    assert list(form.errors) == ["train__effective_batch_size"] and not form.non_field_errors()
    assert response.content.decode().count("must be a multiple of") == 1


def test_a_dsm_run_whose_only_step_is_warmup_is_refused_beside_the_warmup(client, researcher, dataset):
    client.force_login(researcher)
    data = form_data(client.get(reverse("training:run_new")))
    data.update(dataset=dataset.pk, train__max_steps="1")  # warmup 0.1 of 1 step: that step has learning rate 0
    response = client.post(reverse("training:run_new"), data)
    errors = response.context["form"].errors
    assert list(errors) == ["train__warmup_ratio"] and not TrainingRun.objects.exists()
    assert "learning rate of 0, so the model would not change" in errors["train__warmup_ratio"][0]
    data.update(train__warmup_ratio="0")
    assert client.post(reverse("training:run_new"), data).status_code == 302 and TrainingRun.objects.count() == 1


def test_a_zero_learning_rate_or_zero_steps_is_refused_beside_its_field(client, researcher, dataset):
    client.force_login(researcher)
    data = form_data(client.get(reverse("training:run_new")))
    data.update(dataset=dataset.pk, train__warmup_ratio="0", train__lr="0", train__max_steps="0", train__epochs="0")
    errors = client.post(reverse("training:run_new"), data).context["form"].errors
    assert errors["train__lr"] == ["The learning rate must be greater than 0."]
    assert errors["train__max_steps"] == ["The maximum steps must be at least 1."]
    assert errors["train__epochs"] == ["The epochs must be greater than 0."]
    assert not TrainingRun.objects.exists()
