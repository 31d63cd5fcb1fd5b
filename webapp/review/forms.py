"""Forms of the review pages: peak parameters (the sliders), decisions, profiles, validation sets."""

from django import forms
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from ml.peaks import PeakParams, check_params
from webapp.review.models import PeakDecision, ReviewRound

KERNEL_CHOICES = (1, 3, 5, 7, 9)
MAX_GRID = 20  # candidate settings of a validation set
MAX_ACTIVE_MS = 3_600_000  # an hour on one peak is not review time: stored as not measured
DEFAULT_GRID = (
    # The paper's grid (docs/METHOD.md, section Peaks): lower/upper x kernel sizes {1, 3}, sigma 1.0.
    {"kernel_size": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4},
    {"kernel_size": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.6},
    {"kernel_size": 1, "sigma": 1.0, "lower": 0.4, "upper": 0.6},
    {"kernel_size": 1, "sigma": 1.0, "lower": 0.5, "upper": 0.6},
    {"kernel_size": 3, "sigma": 1.0, "lower": 0.2, "upper": 0.4},
    {"kernel_size": 3, "sigma": 1.0, "lower": 0.2, "upper": 0.6},
    {"kernel_size": 3, "sigma": 1.0, "lower": 0.4, "upper": 0.6},
    {"kernel_size": 3, "sigma": 1.0, "lower": 0.5, "upper": 0.6},
)


def grid_text(grid) -> str:
    return "\n".join(f"{s['kernel_size']} {s['sigma']:g} {s['lower']:g} {s['upper']:g}" for s in grid)


def parse_grid(text: str) -> list[dict]:
    """One setting a line: `kernel sigma lower upper`, e.g. `3 1.0 0.2 0.4`."""
    grid, problems = [], []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.replace(",", " ").replace("/", " ").split()
        try:
            if len(parts) != 4:
                raise ValueError(gettext("give four values: kernel sigma lower upper"))
            setting = {
                "kernel_size": int(parts[0]),
                "sigma": float(parts[1]),
                "lower": float(parts[2]),
                "upper": float(parts[3]),
            }
            check_params(**setting)
            if setting["upper"] > 1:
                raise ValueError(gettext("upper must be at most 1"))
        except ValueError as exc:
            problems.append(
                gettext("line %(line)s (%(text)s): %(reason)s") % {"line": number, "text": repr(line), "reason": exc}
            )
            continue
        if setting in grid:
            problems.append(gettext("line %(line)s: the same setting twice") % {"line": number})
            continue
        grid.append(setting)
    if problems:
        raise forms.ValidationError(problems)
    if not grid:
        raise forms.ValidationError(gettext("Give at least one setting."))
    if len(grid) > MAX_GRID:
        raise forms.ValidationError(
            ngettext("At most %(count)s setting.", "At most %(count)s settings.", MAX_GRID) % {"count": MAX_GRID}
        )
    return grid


# form field -> PeakParams field
FIELD_KEYS = (
    ("k", "kernel_size"),
    ("sigma", "sigma"),
    ("lower", "lower"),
    ("upper", "upper"),
    ("trim", "trim"),
    ("strict", "strict"),
)


class ParamsForm(forms.Form):
    """The sliders. Every field is optional: a missing one takes the value of `base` (the
    profile's), so the thresholds are checked as they will be used, given or not."""

    k = forms.TypedChoiceField(
        choices=[(k, k) for k in KERNEL_CHOICES], coerce=int, required=False, label=_("Kernel size")
    )
    sigma = forms.FloatField(min_value=0.25, max_value=3.0, required=False, label=_("Sigma"))
    lower = forms.FloatField(min_value=0.0, max_value=1.0, required=False, label=_("Lower threshold"))
    upper = forms.FloatField(min_value=0.0, max_value=1.0, required=False, label=_("Upper threshold"))
    trim = forms.NullBooleanField(required=False, label=_("Trim punctuation off peaks"))
    strict = forms.NullBooleanField(required=False, label=_("Strict > thresholds (reference code)"))

    def __init__(self, data=None, *, base: PeakParams):
        super().__init__(data)
        self.base = base

    def params(self) -> PeakParams:
        """The effective parameters: the base overridden by the valid fields given."""
        data = self.cleaned_data if self.is_valid() else {}
        changes = {key: data[field] for field, key in FIELD_KEYS if data.get(field) not in (None, "")}
        return self.base.with_(**changes)

    def clean(self):
        data = super().clean()
        lower = self.base.lower if data.get("lower") is None else data["lower"]
        upper = self.base.upper if data.get("upper") is None else data["upper"]
        if lower > upper:
            raise forms.ValidationError(gettext("The lower threshold must not be above the upper one."))
        return data


class DecisionForm(forms.Form):
    """One decision on one peak. `version` is the reviewer's row version the page showed (0: none)."""

    task = forms.IntegerField()
    model = forms.IntegerField()
    method = forms.CharField(max_length=20)
    template = forms.CharField(max_length=500, strip=False)
    config = forms.CharField(max_length=64, required=False)  # RelevanceConfig.key; empty: the default
    profile = forms.IntegerField(required=False)
    k = forms.IntegerField(min_value=1)
    sigma = forms.FloatField()
    lower = forms.FloatField(min_value=0, max_value=1)
    upper = forms.FloatField(min_value=0, max_value=1)
    trim = forms.NullBooleanField(required=False)  # missing: the paper's trimmed peaks
    strict = forms.NullBooleanField(required=False)
    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=1)
    decision = forms.ChoiceField(choices=PeakDecision.Decision.choices)
    adjusted_start = forms.IntegerField(min_value=0, required=False)
    adjusted_end = forms.IntegerField(min_value=1, required=False)
    comment = forms.CharField(required=False, max_length=2000, widget=forms.Textarea)
    version = forms.IntegerField(min_value=0)
    guideline = forms.IntegerField(required=False)  # the TaskGuideline version the page showed
    active_ms = forms.CharField(required=False, max_length=20)  # the page's clock; see clean_active_ms

    def clean_active_ms(self) -> int | None:
        """Milliseconds of active time on the peak, kept when 0 <= value <= MAX_ACTIVE_MS; anything
        else (missing, not a number, implausible) is stored as not measured, never refused."""
        try:
            value = int(self.cleaned_data["active_ms"])
        except (TypeError, ValueError):
            return None
        return value if 0 <= value <= MAX_ACTIVE_MS else None

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        if data["start"] >= data["end"]:
            raise forms.ValidationError(gettext("The peak span is empty."))
        if data["decision"] == PeakDecision.Decision.ADJUST:
            a, b = data.get("adjusted_start"), data.get("adjusted_end")
            if a is None or b is None or a >= b:
                raise forms.ValidationError(gettext("Choose a new start before the new end to adjust a peak."))
        else:
            data["adjusted_start"] = data["adjusted_end"] = None
        try:
            check_params(data["k"], data["sigma"], data["lower"], data["upper"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data

    @property
    def params(self) -> PeakParams:
        return _params_of(self.cleaned_data)


class SaveProfileForm(forms.Form):
    corpus = forms.IntegerField(widget=forms.HiddenInput)  # the page's: the profile is its project's
    name = forms.SlugField(max_length=100, help_text=_("An existing name gets a new version"))
    k = forms.TypedChoiceField(choices=[(k, k) for k in KERNEL_CHOICES], coerce=int)
    sigma = forms.FloatField(min_value=0.25, max_value=3.0)
    lower = forms.FloatField(min_value=0.0, max_value=1.0)
    upper = forms.FloatField(min_value=0.0, max_value=1.0)
    trim = forms.NullBooleanField(required=False)
    strict = forms.NullBooleanField(required=False)
    next = forms.CharField(required=False, max_length=2000)

    def clean(self):
        data = super().clean()
        if data.get("lower") is not None and data.get("upper") is not None and data["lower"] > data["upper"]:
            raise forms.ValidationError(gettext("The lower threshold must not be above the upper one."))
        return data

    @property
    def params(self) -> PeakParams:
        return _params_of(self.cleaned_data)


def _params_of(data) -> PeakParams:
    """PeakParams of a submitted form; a missing trim/strict takes the paper's value."""
    return PeakParams.from_mapping({key: data[field] for field, key in FIELD_KEYS if data.get(field) is not None})


class ValidationSetForm(forms.Form):
    name = forms.CharField(max_length=200)
    model = forms.IntegerField(widget=forms.HiddenInput)
    method = forms.CharField(max_length=20, widget=forms.HiddenInput)
    template = forms.CharField(max_length=500, strip=False, widget=forms.HiddenInput)
    size = forms.IntegerField(min_value=1, max_value=1000, initial=100, label=_("Notes"))
    seed = forms.IntegerField(initial=0)
    grid = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        initial=grid_text(DEFAULT_GRID),
        help_text=_("One setting a line: kernel sigma lower upper"),
    )

    def clean_grid(self):
        return parse_grid(self.cleaned_data["grid"])


class AdoptForm(forms.Form):
    name = forms.SlugField(max_length=100)
    setting = forms.IntegerField(min_value=0)


class RoundForm(forms.Form):
    """A review round: name, tasks, reviewers, k and its guideline; the map (model version,
    method, template, configuration) and the peak profile come from the page's selection."""

    name = forms.CharField(max_length=200)
    tasks = forms.ModelMultipleChoiceField(queryset=None, widget=forms.CheckboxSelectMultiple)
    reviewers = forms.ModelMultipleChoiceField(
        queryset=None, widget=forms.CheckboxSelectMultiple, help_text=_("In the order of the rota")
    )
    k = forms.IntegerField(min_value=1, max_value=20, initial=2, label=_("Reviewers per pair (k)"))
    agreement_needed = forms.IntegerField(
        min_value=50,
        max_value=100,
        initial=100,
        required=False,  # left out: 100, any disagreement goes to a curator
        label=_("Agreement a peak needs (%)"),
        help_text=_(
            "Below it the peak goes to a curator. 100: any disagreement does; 66 with k=3: a 2-to-1 split "
            "stands by majority"
        ),
    )
    guideline = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text=_("Markdown, shown on every page of the round"),
    )
    order = forms.ChoiceField(
        choices=ReviewRound._meta.get_field("order").choices,
        initial="drawn",
        required=False,  # left out (a form or script from before orders): as drawn
        label=_("Review first"),
    )  # webapp.review.orders
    order_seed = forms.IntegerField(min_value=0, initial=0, required=False, label=_("Seed (random order)"))

    def __init__(self, *args, project_id: int, reviewers=(), **kwargs):
        """`project_id`: the corpus's project; its own tasks and the catalog's are offered, so
        another project's task id is an unknown choice."""
        from django.contrib.auth import get_user_model

        from webapp.corpus.models import Task

        super().__init__(*args, **kwargs)
        self.fields["tasks"].queryset = Task.objects.of_project(project_id).active(project_id).order_by("description")
        self.fields["reviewers"].queryset = get_user_model().objects.filter(pk__in=[r.pk for r in reviewers])
        self.fields["reviewers"].queryset = self.fields["reviewers"].queryset.order_by("username")

    def clean_order(self) -> str:
        return self.cleaned_data.get("order") or "drawn"

    def clean_order_seed(self) -> int:
        return self.cleaned_data.get("order_seed") or 0

    def clean_agreement_needed(self) -> int:
        value = self.cleaned_data.get("agreement_needed")
        return 100 if value is None else value


class RoundOrderForm(forms.Form):
    """A round's order, changed on its page (webapp.review.orders)."""

    order = forms.ChoiceField(choices=ReviewRound._meta.get_field("order").choices)
    order_seed = forms.IntegerField(min_value=0, required=False)
