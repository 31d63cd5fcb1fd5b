"""The launch form: a preset, the inputs of its run kind, and every setting of its configuration.

The settings are form fields built from the configuration dataclasses of the preset's kind
(webapp.training.configs), named "<section>__<setting>", with the preset's values (the paper's)
as initial values. Validation is the domain's (`RunSpec.problems()`); its problems are shown on
the fields they concern.
"""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from webapp.corpus.models import Corpus
from webapp.datasets.models import DatasetVersion
from webapp.pipeline.models import JobStatus, ModelVersion
from webapp.projects.forms import ScopedChoicesForm
from webapp.projects.roles import Capability
from webapp.training import configs, presets
from webapp.training.models import CAUSAL_KINDS, LabeledSplit
from webapp.training.runs import RunSpec

SEP = "__"


class LaunchForm(ScopedChoicesForm, forms.Form):
    scope_capability = Capability.LAUNCH

    preset = forms.ChoiceField(choices=[(key, p.label) for key, p in presets.PRESETS.items()], widget=forms.HiddenInput)
    name = forms.CharField(
        max_length=200,
        required=False,
        label=gettext_lazy("Name"),
        help_text=gettext_lazy("Optional; shown in lists and tables"),
    )
    model_version = forms.ModelChoiceField(
        ModelVersion.objects.all(),
        label=gettext_lazy("Model version"),
        help_text=gettext_lazy("The model to train or evaluate (a trained model too)"),
    )
    dataset = forms.ModelChoiceField(
        DatasetVersion.objects.filter(status=JobStatus.DONE),
        required=False,
        label=gettext_lazy("Dataset version"),
        help_text=gettext_lazy("Finished datasets only"),
    )
    split = forms.ModelChoiceField(
        LabeledSplit.objects.select_related("corpus"),
        required=False,
        label=gettext_lazy("Labeled split"),
        help_text=gettext_lazy("Reuse a stored split (same test items)"),
    )
    split_corpus = forms.ModelChoiceField(
        Corpus.objects.all(),
        required=False,
        label=gettext_lazy("…or split this corpus"),
        help_text=gettext_lazy("Its gold annotations; a split with the same seed and share is reused"),
    )
    split_seed = forms.IntegerField(initial=0, label=gettext_lazy("Split seed"))
    split_test_ratio = forms.FloatField(
        initial=0.15, label=gettext_lazy("Test share"), help_text=gettext_lazy("The paper: 0.15")
    )

    def __init__(self, data=None, *, user, preset: str = "dsm-full", model_version=None):
        if data is not None:
            preset = data.get("preset", preset)
        self.preset_obj = presets.PRESETS.get(preset) or presets.PRESETS["dsm-full"]
        super().__init__(data, initial={"preset": self.preset_obj.key}, user=user)
        self.kind = self.preset_obj.kind
        models = self.fields["model_version"].queryset
        chosen = models.filter(pk=model_version).first() if str(model_version or "").isdigit() else None
        self.fields["model_version"].initial = chosen or ModelVersion.objects.filter(is_default=True).first()
        self.fields["model_version"].error_messages["required"] = _("Choose the model to train or evaluate.")
        if self.kind in CAUSAL_KINDS:
            for name in ("split", "split_corpus", "split_seed", "split_test_ratio"):
                del self.fields[name]
            self.fields["dataset"].required = True
            self.fields["dataset"].error_messages["required"] = _("Choose the dataset version to train on.")
        else:
            del self.fields["dataset"]
        self.sections = {}
        for section, values in self.preset_obj.config().items():
            self.sections[section] = []
            types = configs.field_types(configs.section_classes(self.kind)[section])
            for setting, accepted in types.items():
                name = f"{section}{SEP}{setting}"
                self.fields[name] = _field(setting, accepted, values[setting])
                self.sections[section].append(name)

    def section_fields(self):
        """[(section, [bound fields])] for the template."""
        return [
            (configs.SECTION_LABELS.get(section, section), [self[name] for name in names])
            for section, names in self.sections.items()
        ]

    def clean(self):
        """Every problem at once: the domain checks what the fields could read, and each
        problem is said once, beside its field (a field that failed to read keeps that message)."""
        data = super().clean()
        for key, problem in self.spec().problems().items():
            field = key.replace(".", SEP)
            field = field if field in self.fields else None
            if field in self.errors or (field is None and problem in self.non_field_errors()):
                continue
            self.add_error(field, problem)
        return data

    def spec(self) -> RunSpec:
        """The run asked for; a setting whose field did not read is left out (its default stands in)."""
        data = self.cleaned_data
        overrides = {
            section: {name.split(SEP, 1)[1]: data[name] for name in names if name in data}
            for section, names in self.sections.items()
        }
        return RunSpec(
            kind=self.kind,
            preset=self.preset_obj.key,
            name=data.get("name", ""),
            model_version=data.get("model_version"),
            dataset=data.get("dataset"),
            split=data.get("split"),
            split_corpus=data.get("split_corpus"),
            split_seed=data.get("split_seed") or 0,
            split_test_ratio=data.get("split_test_ratio") or 0.15,
            config=overrides,
        )


def _field(setting: str, types: set, initial) -> forms.Field:
    label = configs.label(setting)
    label = label[:1].upper() + label[1:]  # "LoRA r", "CPU offload": capitalize() would lower the rest
    optional = type(None) in types
    if list in types:
        return forms.CharField(
            required=False,
            initial=", ".join(initial or []),
            label=label,
            help_text=_("Comma-separated; empty: the default"),
        )
    if setting in configs.CHOICES:
        choices = [(c, configs.CHOICE_LABELS.get(c, c)) for c in configs.CHOICES[setting]]
        return forms.ChoiceField(choices=choices, initial=initial, label=label)
    if bool in types:
        return forms.BooleanField(required=False, initial=initial, label=label)
    if int in types and float not in types:
        return forms.IntegerField(
            required=not optional,
            initial=initial,
            label=label,
            help_text=configs.EMPTY_MEANS.get(setting, _("Empty: no limit")) if optional else "",
        )
    if float in types:
        return forms.FloatField(
            required=not optional, initial=initial, label=label, widget=forms.NumberInput(attrs={"step": "any"})
        )
    return forms.CharField(required=False, initial=initial, label=label, strip=False)
