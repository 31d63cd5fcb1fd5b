"""What a review page shows, read from its query string: task, model version, method, template,
peak profile and the peak parameters in effect (the profile's, or the sliders' when moved).

Defaults: on a note, the first combination that has a map for the note (the default model
version first); on a corpus, the default model version, AttnLRP and the template of the
corpus's latest relevance job. Without any PeakProfile the paper's parameters apply.
Unknown or invalid values fall back to the defaults and are reported in `errors`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from webapp.corpus.models import Task
from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceJob, RelevanceMap
from ml.peaks import PAPER, PeakParams
from webapp.review.forms import ParamsForm


@dataclass
class Selection:
    task: Task | None
    model: ModelVersion | None
    method: str
    template: str
    profile: PeakProfile | None
    params: PeakParams
    errors: list[str] = field(default_factory=list)
    tasks: list = field(default_factory=list)  # choices offered
    models: list = field(default_factory=list)
    methods: list = field(default_factory=list)
    templates: list = field(default_factory=list)

    @property
    def base_params(self) -> PeakParams:
        return self.profile.params if self.profile else PAPER

    @property
    def custom(self) -> bool:
        """The sliders differ from the profile."""
        return self.params != self.base_params

    @property
    def ready(self) -> bool:
        return self.task is not None and self.model is not None

    def query_dict(self, *, params: bool = True, **changes) -> dict:
        values = {"task": self.task.pk if self.task else None, "model": self.model.pk if self.model else None,
                  "method": self.method, "template": self.template,
                  "profile": self.profile.pk if self.profile else None}
        if params and self.custom:
            p, base = self.params, self.base_params
            values.update(k=p.kernel_size, sigma=f"{p.sigma:g}", lower=f"{p.lower:g}", upper=f"{p.upper:g}")
            if p.trim != base.trim:
                values["trim"] = "true" if p.trim else "false"
            if p.strict != base.strict:
                values["strict"] = "true" if p.strict else "false"
        values.update(changes)
        return {key: value for key, value in values.items() if value not in (None, "")}

    def query(self, *, params: bool = True, **changes) -> str:
        return urlencode(self.query_dict(params=params, **changes))


def default_profile() -> PeakProfile | None:
    return PeakProfile.objects.filter(is_default=True).first() or PeakProfile.objects.order_by("-created").first()


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _profile(query, errors) -> PeakProfile | None:
    pk = _int(query.get("profile"))
    if pk is not None:
        profile = PeakProfile.objects.filter(pk=pk).first()
        if profile is not None:
            return profile
        errors.append("That peak profile does not exist; the default is shown.")
    return default_profile()


def _params(query, profile, errors) -> PeakParams:
    base = profile.params if profile else PAPER
    form = ParamsForm(query)
    if not form.is_valid():
        errors.extend(f"{', '.join(m for m in messages)}" for messages in form.errors.values())
        return base
    return form.params(base)


def for_note(note, query) -> Selection:
    """The selection of a note page: only combinations the note has maps for are offered."""
    errors: list[str] = []
    combos = list(RelevanceMap.objects.filter(note=note)
                  .values_list("task_id", "model_version_id", "method", "template").distinct())
    model_ids = sorted({c[1] for c in combos})
    models = list(ModelVersion.objects.filter(pk__in=model_ids).order_by("name"))
    by_pk = {m.pk: m for m in models}
    wanted = _int(query.get("model"))
    default = next((m for m in models if m.is_default), models[0] if models else None)
    model = by_pk.get(wanted, default)
    if wanted is not None and wanted not in by_pk:
        model = ModelVersion.objects.filter(pk=wanted).first() or default
    of_model = [c for c in combos if model and c[1] == model.pk]
    methods = sorted({c[2] for c in of_model})
    method = query.get("method") if query.get("method") in methods else (
        "attnlrp" if "attnlrp" in methods else (methods[0] if methods else query.get("method") or "attnlrp"))
    templates = sorted({c[3] for c in of_model if c[2] == method})
    template = query.get("template") if query.get("template") in templates else (
        templates[0] if templates else query.get("template") or "en")
    task_ids = sorted({c[0] for c in of_model if c[2] == method and c[3] == template})
    tasks = list(Task.objects.filter(pk__in=task_ids).order_by("slug"))
    wanted_task = _int(query.get("task"))
    task = next((t for t in tasks if t.pk == wanted_task), None)
    if task is None and wanted_task is not None:
        task = Task.objects.filter(pk=wanted_task).first()
    if task is None and tasks:
        task = tasks[0]
    profile = _profile(query, errors)
    return Selection(task, model, method, template, profile, _params(query, profile, errors), errors,
                     tasks=tasks, models=models, methods=methods or [method], templates=templates or [template])


def for_corpus(corpus, query) -> Selection:
    """The selection of a corpus-level page (browser, queue, preview, validation)."""
    errors: list[str] = []
    models = list(ModelVersion.objects.order_by("name"))
    wanted = _int(query.get("model"))
    model = next((m for m in models if m.pk == wanted), None) or next((m for m in models if m.is_default), None) \
        or (models[0] if models else None)
    methods = [value for value, _ in RelevanceJob.Method.choices]
    method = query.get("method") if query.get("method") in methods else "attnlrp"
    templates = list(RelevanceJob.objects.filter(corpus=corpus).order_by("-created")
                     .values_list("template", flat=True)[:20])
    templates = list(dict.fromkeys(templates))
    default_template = templates[0] if templates else (corpus.language if corpus.language in ("en", "it") else "en")
    template = query.get("template") or default_template
    if template not in templates:
        templates.append(template)
    wanted_task = _int(query.get("task"))
    task = Task.objects.filter(pk=wanted_task).first() if wanted_task is not None else None
    profile = _profile(query, errors)
    return Selection(task, model, method, template, profile, _params(query, profile, errors), errors,
                     tasks=list(Task.objects.order_by("slug")), models=models, methods=methods, templates=templates)
