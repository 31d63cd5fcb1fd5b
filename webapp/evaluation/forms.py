"""The launch form of a relevance evaluation: a corpus (with evidence, or any corpus with chosen
tasks), a model, what to compare, and whether to measure faithfulness too."""

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ml.faithfulness import PASSES_PER_PAIR
from ml.prompts import TEMPLATES
from ml.relevance import IMPORTED
from webapp.corpus.models import Corpus, Task
from webapp.evaluation.evaluations import EvaluationSpec
from webapp.lib.seeds import MAX_SEED
from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceJob
from webapp.projects.forms import ScopedChoicesForm
from webapp.projects.roles import Capability

TEMPLATE_CHOICES = [
    ("auto", gettext_lazy("The corpus's language (its built-in template; English otherwise)")),
    *[(name, f"{name}: “{template.text}”") for name, template in TEMPLATES.items()],
]


class EvaluationForm(ScopedChoicesForm, forms.Form):
    scope_capability = Capability.LAUNCH

    corpus = forms.ModelChoiceField(
        Corpus.objects.order_by("name"),
        empty_label=None,
        label=gettext_lazy("Corpus"),
        help_text=gettext_lazy(
            "Its annotations with evidence spans, and the peaks kept and spans added in review, are the gold"
        ),
    )
    pairs_from = forms.ChoiceField(
        choices=[
            (
                "evidence",
                gettext_lazy("Pairs with gold evidence: annotations, or peaks kept and spans added in review"),
            ),
            ("notes", gettext_lazy("Drawn notes x every chosen task (any corpus, gold or not)")),
        ],
        initial="evidence",
        required=False,  # not posted: the annotated evidence pairs, as before this choice existed
        label=gettext_lazy("Pairs"),
        widget=forms.RadioSelect,
        help_text=gettext_lazy("Drawn notes are asked about every chosen task, so task-specificity compares them"),
    )
    faithfulness = forms.BooleanField(
        required=False,
        label=gettext_lazy("Also measure faithfulness (no gold needed)"),
    )
    model_version = forms.ModelChoiceField(ModelVersion.objects.all(), empty_label=None, label=gettext_lazy("Model"))
    methods = forms.MultipleChoiceField(
        # imported: maps computed elsewhere (manage.py import_maps), scored as they are, never computed
        choices=[*RelevanceJob.Method.choices, (IMPORTED, gettext_lazy("Imported maps (computed elsewhere)"))],
        label=gettext_lazy("Methods"),
        widget=forms.CheckboxSelectMultiple,
        initial=[RelevanceJob.Method.ATTNLRP],
    )
    explains = forms.MultipleChoiceField(
        choices=RelevanceJob.Explain.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=["next"],
        label=gettext_lazy("Explain variants"),
        help_text=gettext_lazy("Every method is run with every variant chosen"),
    )
    template = forms.ChoiceField(choices=TEMPLATE_CHOICES, initial="auto", label=gettext_lazy("Prompt template"))
    tasks = forms.ModelMultipleChoiceField(
        Task.objects.active().order_by("slug"),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 6}),
        label=gettext_lazy("Tasks"),
        help_text=gettext_lazy("None chosen: every task with evidence annotations (drawn notes need chosen tasks)"),
    )
    profile = forms.ModelChoiceField(
        PeakProfile.objects.all(),
        empty_label=None,
        label=gettext_lazy("Peak profile"),
        help_text=gettext_lazy("The peak rule the peak precision and recall are measured with"),
    )
    max_pairs = forms.IntegerField(
        min_value=1,
        required=False,
        initial=200,
        label=gettext_lazy("At most N pairs"),
        help_text=gettext_lazy(
            "Annotated (note, task) pairs, drawn with the seed; empty: all of them. "
            "Each pair costs one prompt per configuration (~0.5-1.3 s on a CPU)"
        ),
    )
    seed = forms.IntegerField(
        initial=0,
        min_value=0,
        max_value=MAX_SEED,
        label=gettext_lazy("Seed"),
        help_text=gettext_lazy("Draws the pairs, the bootstrap resamples and the random baseline"),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["faithfulness"].help_text = _(
            "Hide each map's top 5-50%% tokens and re-score the prediction, against 10 random rankings "
            "of the same note: %(passes)s forward passes per pair and configuration beyond the map"
        ) % {"passes": PASSES_PER_PAIR}
        default_model = ModelVersion.objects.filter(is_default=True).first()
        if default_model is not None:
            self.fields["model_version"].initial = default_model.pk
        default_profile = PeakProfile.objects.filter(is_default=True).first()
        if default_profile is not None:
            self.fields["profile"].initial = default_profile.pk

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        for problem_field, problem in self.spec().problems().items():
            self.add_error(problem_field if problem_field in self.fields else None, problem)
        return data

    def spec(self) -> EvaluationSpec:
        data = self.cleaned_data
        return EvaluationSpec(
            corpus=data["corpus"],
            model_version=data["model_version"],
            methods=list(data["methods"]),
            explains=list(data["explains"]),
            template=data["template"],
            profile=data["profile"],
            tasks=list(data.get("tasks") or []),
            max_pairs=data.get("max_pairs"),
            seed=data["seed"],
            pairs_from=data.get("pairs_from") or "evidence",
            faithfulness=bool(data.get("faithfulness")),
        )
