from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from ml.masking import DEFAULT_MASK_TOKEN
from webapp.corpus.forms import visible_name
from webapp.corpus.models import Corpus, Note, Task
from webapp.datasets.building import maps_matching, validation_note_ids
from webapp.datasets.models import BuildError, DatasetVersion
from webapp.lib.seeds import MAX_SEED
from webapp.lib.validators import SHOWN_CHARS, printable
from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceJob
from webapp.projects.forms import ScopedChoicesForm
from webapp.projects.roles import Capability


def job_label(job: RelevanceJob) -> str:
    """A relevance job as a choice reads it, in the reader's language ("relevance job 3 (done)")."""
    return _("relevance job %(id)s (%(status)s)") % {"id": job.pk, "status": job.get_status_display()}


MAX_NOTE_IDS = 50_000


class BuildForm(ScopedChoicesForm, forms.Form):
    scope_capability = Capability.LAUNCH

    empty_selection = ""  # set by clean(): why the selection gives no example, for the live estimate
    name = forms.CharField(
        max_length=200,
        validators=[visible_name],
        label=gettext_lazy("Name"),
        help_text=gettext_lazy("A new name, or an existing one to make its next version"),
    )
    corpus = forms.ModelChoiceField(Corpus.objects.all(), label=gettext_lazy("Corpus"))
    model_version = forms.ModelChoiceField(ModelVersion.objects.all(), label=gettext_lazy("Model version"))
    method = forms.ChoiceField(
        choices=RelevanceJob.Method.choices, initial=RelevanceJob.Method.ATTNLRP, label=gettext_lazy("Method")
    )
    template = forms.CharField(
        max_length=500,
        initial="en",
        label=gettext_lazy("Template"),
        help_text=gettext_lazy("The relevance template of the maps: 'en', 'it' or the custom text"),
    )
    jobs = forms.ModelMultipleChoiceField(
        RelevanceJob.objects.all(),
        required=False,
        label=gettext_lazy("Relevance jobs"),
        help_text=gettext_lazy(
            "Only maps written by these jobs. None chosen: every matching map, when they come from one "
            "relevance configuration; where several configurations have maps, choose the jobs of the one to use"
        ),
    )
    profile = forms.ModelChoiceField(PeakProfile.objects.all(), label=gettext_lazy("Peak profile"))
    mode = forms.ChoiceField(
        choices=DatasetVersion.Mode.choices, initial=DatasetVersion.Mode.DSM, label=gettext_lazy("Mode")
    )
    tasks = forms.ModelMultipleChoiceField(
        Task.objects.active().order_by("slug"),
        required=False,
        label=gettext_lazy("Tasks"),
        help_text=gettext_lazy("None chosen: every task that has maps"),
    )
    include_held_out = forms.BooleanField(
        required=False,
        label=gettext_lazy("Include held-out tasks"),
        help_text=gettext_lazy("Held-out tasks measure generalisation; leave them out of training"),
    )
    notes = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label=gettext_lazy("Only these notes"),
        help_text=gettext_lazy("Note ids of the corpus, separated by spaces, commas or new lines (optional)"),
    )
    seed = forms.IntegerField(
        initial=0,
        min_value=0,
        max_value=MAX_SEED,
        label=gettext_lazy("Seed"),
        help_text=gettext_lazy("Seeds the random-mask ablation"),
    )
    mask_token = forms.CharField(
        max_length=50, initial=DEFAULT_MASK_TOKEN, strip=False, label=gettext_lazy("Mask token")
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model_version"].initial = ModelVersion.objects.filter(is_default=True).first()
        self.fields["profile"].initial = PeakProfile.objects.filter(is_default=True).first()
        self.fields["jobs"].label_from_instance = job_label

    def clean_mask_token(self):
        token = self.cleaned_data["mask_token"]
        if not token.strip():
            raise forms.ValidationError(_("The mask token cannot be blank."))
        return token

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        tasks, include = data.get("tasks"), data.get("include_held_out")
        held = [t.slug for t in tasks or () if t.held_out]
        if held and not include:
            self.add_error(
                "tasks",
                ngettext(
                    "%(tasks)s is held out: tick 'Include held-out tasks' to use them.",
                    "%(tasks)s are held out: tick 'Include held-out tasks' to use them.",
                    len(held),
                )
                % {"tasks": ", ".join(held)},
            )
        data["note_ids"] = self._note_ids(data)
        if self.errors:
            return data
        fields = self.build_fields()
        try:
            maps = maps_matching(
                fields["corpus"].pk,
                fields["model_version"].pk,
                fields["method"],
                fields["template"],
                [job.pk for job in fields["jobs"]],
                fields["filters"],
            )
        except BuildError as exc:
            self.add_error("jobs", str(exc))
            return data
        if not maps.exists():
            raise forms.ValidationError(
                _(
                    "No relevance maps match these choices (corpus, model version, method, template, jobs, tasks "
                    "and notes). Run a relevance job first, or check the template and the held-out setting."
                )
            )
        # The build skips notes held back for threshold validation: counted out here, so the
        # estimate is of the maps it reads and an all-held-back selection is refused now, not
        # found out after "Done, 0 examples".
        held_back = validation_note_ids(fields["corpus"].pk)
        self.maps = maps.exclude(note_id__in=held_back) if held_back else maps
        if held_back and not self.maps.exists():
            self.empty_selection = _(
                "This selection gives 0 examples: all %(count)s of its relevance maps are on notes held "
                "back for threshold validation, which no dataset uses. Choose other notes or jobs, or retire the "
                "validation set (Review, Validation) first."
            ) % {"count": f"{maps.count():,}"}
            raise forms.ValidationError(self.empty_selection)
        return data

    def build_fields(self) -> dict:
        """Keyword arguments of webapp.datasets.launch.launch_build."""
        data = self.cleaned_data
        filters = {"exclude_held_out": not data["include_held_out"]}
        if data["tasks"]:
            filters["tasks"] = sorted(t.pk for t in data["tasks"])
        if data["note_ids"]:
            filters["notes"] = data["note_ids"]
        return {
            "name": data["name"],
            "corpus": data["corpus"],
            "model_version": data["model_version"],
            "method": data["method"],
            "template": data["template"],
            "jobs": list(data["jobs"]),
            "profile": data["profile"],
            "mode": data["mode"],
            "seed": data["seed"],
            "mask_token": data["mask_token"],
            "filters": filters,
        }

    def _note_ids(self, data) -> list[int]:
        wanted = [w for w in data.get("notes", "").replace(",", " ").split() if w]
        if not wanted:
            return []
        if len(wanted) > MAX_NOTE_IDS:
            self.add_error(
                "notes",
                _("At most %(count)s notes can be listed; use a relevance job instead.")
                % {"count": f"{MAX_NOTE_IDS:,}"},
            )
            return []
        notes = Note.objects.filter(corpus=data["corpus"], external_id__in=wanted)
        found = dict(notes.values_list("external_id", "pk"))
        missing = [w for w in wanted if w not in found]
        if missing:
            shown = ", ".join(_shown(w) for w in missing[:5]) + (" ..." if len(missing) > 5 else "")
            self.add_error(
                "notes",
                _("%(count)s note id(s) are not in this corpus: %(ids)s") % {"count": len(missing), "ids": shown},
            )
            return []
        return sorted(set(found.values()))


def _shown(note_id: str) -> str:
    """An unknown note id as the error quotes it: cut, its hidden characters escaped, so a pasted
    page of text comes back as a short line."""
    return printable(note_id[:SHOWN_CHARS]) + ("…" if len(note_id) > SHOWN_CHARS else "")
