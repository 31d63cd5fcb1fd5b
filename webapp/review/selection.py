"""What a review page shows, read from its query string: task, model version, method, template,
relevance configuration, peak profile and the peak parameters in effect (the profile's, or the
sliders' when moved).

Relevance configuration (`config`, a RelevanceConfig key): maps of one configuration only are
ever shown or counted together. On a note the choices are the configurations its maps have (the
default configuration first); on a corpus, those of the corpus's relevance jobs for the method
and template (the latest job's by default).

Defaults: on a note, the first combination that has a map for the note (the default model
version first); on a corpus, the default model version, AttnLRP and the template of the
corpus's latest relevance job. Without any PeakProfile the paper's parameters apply.
Unknown or invalid values fall back to the defaults and are reported in `errors`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.utils.translation import get_language
from django.utils.translation import gettext as _

from ml.peaks import PAPER, PeakParams
from ml.relevance import RelevanceConfig, default_config_key
from ml.relevance.methods import DEFAULT
from webapp.corpus.models import Task
from webapp.db.prepared import Prepared
from webapp.pipeline.models import METHOD_LABELS, ModelVersion, PeakProfile, RelevanceJob, RelevanceMap
from webapp.review import catalog
from webapp.review.forms import FIELD_KEYS, ParamsForm


@dataclass
class Selection:
    task: Task | None
    model: ModelVersion | None
    method: str
    template: str
    profile: PeakProfile | None
    params: PeakParams
    errors: list[str] = field(default_factory=list)
    config_key: str = ""  # RelevanceConfig.key; empty: the default configuration of method and template
    tasks: list = field(default_factory=list)  # choices offered
    models: list = field(default_factory=list)
    methods: list = field(default_factory=list)
    templates: list = field(default_factory=list)
    configs: list = field(default_factory=list)  # [(key, label)] offered

    @property
    def method_options(self) -> list[tuple[str, str]]:
        """(value, label in the reader's language) of the methods offered."""
        return [(m, str(METHOD_LABELS.get(m, m))) for m in self.methods]

    @property
    def config(self) -> str:
        """The configuration key in effect."""
        return self.config_key or default_config_key(self.method, self.template)

    def maps(self):
        """The maps of this selection's method, template and configuration (any note, task, model)."""
        return RelevanceMap.objects.for_config(self.method, self.template, self.config)

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
        values = {
            "task": self.task.pk if self.task else None,
            "model": self.model.pk if self.model else None,
            "method": self.method,
            "template": self.template,
            "profile": self.profile.pk if self.profile else None,
            "config": self.config if self.config != default_config_key(self.method, self.template) else None,
        }
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
        """The query string of this selection (with `changes`). Without changes it is kept on the
        object, keyed by what it is made of: a note page writes it in some fifteen links."""
        if changes or not params:
            return urlencode(self.query_dict(params=params, **changes))
        made_of = (self.task, self.model, self.method, self.template, self.profile, self.config_key, self.params)
        kept = self.__dict__.get("_query")
        if kept is None or kept[0] != made_of:
            kept = (made_of, urlencode(self.query_dict()))
            self.__dict__["_query"] = kept
        return kept[1]


def default_profile(project_id: int) -> PeakProfile | None:
    """The profile marked default (shared), else the latest the project may use."""
    return PeakProfile.objects.default_of(project_id)


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _profile(query, errors, project_id: int) -> PeakProfile | None:
    pk = _int(query.get("profile"))
    if pk is not None:
        profile = catalog.profile(pk, project_id)
        if profile is not None:
            return profile
        errors.append(_("That peak profile does not exist; the default is shown."))
    return catalog.default_profile(project_id)


def _params(query, profile, errors) -> PeakParams:
    base = profile.params if profile else PAPER
    if not any(name in query for name, _key in FIELD_KEYS):
        return base  # no slider given: what the form gives (PeakParams holds lower <= upper), unbuilt
    form = ParamsForm(query, base=base)
    if not form.is_valid():
        errors.extend(f"{', '.join(m for m in messages)}" for messages in form.errors.values())
        return base
    return form.params()


def for_note(note, query) -> Selection:
    """The selection of a note page: only combinations the note has maps for are offered."""
    errors: list[str] = []
    combos = COMBOS.rows(None, note_id=note.pk)
    project_id = note.corpus.project_id
    model_ids = {c[1] for c in combos}
    models = [m for m in catalog.model_versions(project_id) if m.pk in model_ids]
    if len(models) < len(model_ids):  # a model version newer than this process's copy
        models = list(ModelVersion.objects.of_project(project_id).filter(pk__in=model_ids).order_by("name"))
    by_pk = {m.pk: m for m in models}
    wanted = _int(query.get("model"))
    default = next((m for m in models if m.is_default), models[0] if models else None)
    model = by_pk.get(wanted, default)
    if wanted is not None and wanted not in by_pk:
        model = catalog.model_version(wanted, project_id) or default
    of_model = [c for c in combos if model and c[1] == model.pk]
    methods = sorted({c[2] for c in of_model})
    method = (
        query.get("method")
        if query.get("method") in methods
        else (DEFAULT if DEFAULT in methods else (methods[0] if methods else query.get("method") or DEFAULT))
    )
    templates = sorted({c[3] for c in of_model if c[2] == method})
    template = (
        query.get("template")
        if query.get("template") in templates
        else (templates[0] if templates else query.get("template") or "en")
    )
    default_key = default_config_key(method, template)
    keys = sorted({c[4] for c in of_model if c[2] == method and c[3] == template}, key=lambda k: (k != default_key, k))
    config = query.get("config") if query.get("config") in keys else (keys[0] if keys else default_key)
    task_ids = sorted({c[0] for c in of_model if c[2] == method and c[3] == template and c[4] == config})
    tasks = catalog.tasks(task_ids, project_id)
    wanted_task = _int(query.get("task"))
    task = next((t for t in tasks if t.pk == wanted_task), None)
    if task is None and wanted_task is not None:
        task = catalog.task(wanted_task, project_id)
    if task is None and tasks:
        task = tasks[0]
    profile = _profile(query, errors, project_id)
    return Selection(
        task,
        model,
        method,
        template,
        profile,
        _params(query, profile, errors),
        errors,
        config_key=config,
        tasks=tasks,
        models=models,
        methods=methods or [method],
        templates=templates or [template],
        configs=config_choices(keys or [config], method, template),
    )


def _combos(_shape, *, note_id):
    """(task, model version, method, template, configuration key) of the note's maps."""
    return (
        RelevanceMap.objects.filter(note_id=note_id)
        .values_list("task_id", "model_version_id", "config__method", "config__template", "config__config_key")
        .distinct()
    )


COMBOS = Prepared(_combos)  # webapp.db.prepared: built once per process


def for_corpus(corpus, query) -> Selection:
    """The selection of a corpus-level page (browser, queue, preview, validation)."""
    errors: list[str] = []
    models = catalog.model_versions(corpus.project_id)
    wanted = _int(query.get("model"))
    model = (
        next((m for m in models if m.pk == wanted), None)
        or next((m for m in models if m.is_default), None)
        or (models[0] if models else None)
    )
    methods = [value for value, _ in RelevanceJob.Method.choices]
    method = query.get("method") if query.get("method") in methods else DEFAULT
    templates = list(catalog.corpus_templates(corpus.pk))
    default_template = (
        templates[0] if templates else (corpus.language if corpus.language in ("en", "it", "es") else "en")
    )
    template = query.get("template") or default_template
    if template not in templates:
        templates.append(template)
    keys = catalog.corpus_config_keys(corpus.pk, method, template)
    wanted_config = query.get("config") or ""
    if (
        wanted_config
        and wanted_config not in keys
        and RelevanceMap.objects.for_config(method, template, wanted_config).filter(note__corpus=corpus).exists()
    ):
        keys.append(wanted_config)  # maps of it exist (e.g. from another corpus's job): offer it too
    config = wanted_config if wanted_config in keys else keys[0]
    wanted_task = _int(query.get("task"))
    task = catalog.task(wanted_task, corpus.project_id)
    profile = _profile(query, errors, corpus.project_id)
    return Selection(
        task,
        model,
        method,
        template,
        profile,
        _params(query, profile, errors),
        errors,
        config_key=config,
        tasks=list(catalog.active_tasks(corpus.project_id)),
        models=models,
        methods=methods,
        templates=templates,
        configs=config_choices(keys, method, template),
    )


_labels: dict[tuple[str, str], str] = {}


def config_choices(keys, method: str, template: str) -> list[tuple[str, str]]:
    """(key, label) of configuration keys: what differs from the default, from a job that stored it.
    A known key's label is kept per process and language: a key is the digest of its settings, so
    its label never changes."""
    language = get_language()
    labels = [_labels.get((key, language)) for key in keys]
    if None not in labels:
        return list(zip(keys, labels, strict=True))
    stored = {default_config_key(method, template): RelevanceConfig(method=method, template=template).to_dict()}
    for key, config in catalog.stored_configs(keys).items():
        stored.setdefault(key, config)
    choices = []
    for key in keys:
        label = config_label(stored.get(key), key)
        if stored.get(key) is not None:
            _labels[(key, language)] = label
        choices.append((key, label))
    return choices


def config_label(config: dict | None, key: str) -> str:
    """e.g. 'explain span, normalise clip' or 'explain next (default)'; the key when unknown."""
    try:
        cfg = RelevanceConfig.from_dict(config) if config else None
    except (TypeError, ValueError):
        cfg = None
    if cfg is None:
        return key
    default = RelevanceConfig(method=cfg.method, template=cfg.template)
    if cfg.key == default.key:
        return _("%(config)s (default)") % {"config": f"explain {cfg.explain}"}  # parameter names stay as written
    changed = [
        f"{name} {value}"
        for name, value in cfg.to_dict().items()
        if name not in ("method", "template", "explain") and value != getattr(default, name)
    ]
    return ", ".join([f"explain {cfg.explain}", *changed])
