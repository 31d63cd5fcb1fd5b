"""Clinicians' review of peaks, validation rounds for threshold settings, and stored samples.

PeakDecision: one row per (peak, reviewer). A peak is identified by its note, task, model
version, method, template and its character span AS SHOWN to the reviewer; the profile and the
exact peak parameters in effect are kept for provenance, not for identity (the same span found
under two profiles is the same peak). Two reviewers never share a row, so neither overwrites
the other; `version` counts a reviewer's changes to their row (optimistic concurrency: a form
carries the version it was rendered with and a stale one is refused), `previous` keeps the row's
state before its last change (one level of undo). `guideline_version` names the task's guideline
(corpus.TaskGuideline) the decision was made under; `active_ms` is the page's measure of the time
spent on the peak (static/review/review.js; null when not measured or implausible). Each task row
counts its decisions (corpus.Task.decision_count, kept by the triggers of migration
0004_task_decision_count).

ValidationSet: N (note, task) items drawn with a seed, and a grid of candidate peak settings;
ValidationJudgement: a reviewer's yes/no ("peaks semantically reasonable for s_T") for one item
under one setting. The notes of every validation set not retired are held out of dataset builds
(`webapp.review.validation.validation_note_ids`). A set is never deleted: retiring it gives its
notes back to later builds and keeps it, its items and judgements, as history.

MapSample: a deterministic sample of map ids of one (corpus, model version, method, template),
drawn once and stored, so that the corpus preview of the tuning page reads a fixed set of maps
instead of scanning the corpus on every slider move.

Review as team work: rounds over a corpus with reviewers and an overlap k, claims on their pairs,
and curators' final decisions on disputed peaks (ReviewRound ... ValidationVerdict;
webapp.review.rounds and webapp.review.adjudication hold the rules).

Stored peaks: the peaks of one relevance map under one peak setting, computed once and read by the
review queue, the note page and the decisions (MapPeaks, StoredPeak; webapp.review.peakstore holds
the rules, including when a row is stale).
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext, ngettext, pgettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from ml.relevance import default_config_key
from webapp.lifecycle.models import WorkUnit
from webapp.lifecycle.status import choice_word
from webapp.projects.scoping import ProjectScopedQuerySet

# A decision and a judgement as a row's name (its __str__, the admin's links) says them: in English
# the stored code and Python's True/False, as rows always read
_DECISION_WORDS = {
    "accept": pgettext_lazy("a decision in a row's name", "accept"),
    "reject": pgettext_lazy("a decision in a row's name", "reject"),
    "adjust": pgettext_lazy("a decision in a row's name", "adjust"),
}


def decision_word(decision: str) -> str:
    return str(_DECISION_WORDS.get(decision, decision))


def truth_word(value) -> str:
    if value is True:
        return pgettext("a judgement in a row's name", "True")
    if value is False:
        return pgettext("a judgement in a row's name", "False")
    return str(value)


class ConfigKeyDefault:
    """A row saved without a relevance configuration key gets the default configuration's of its
    method and template (what every map had before configurations were recorded)."""

    def save(self, *args, **kwargs):
        if not self.config_key:
            self.config_key = default_config_key(self.method, self.template)
        super().save(*args, **kwargs)


class PeakDecision(ConfigKeyDefault, models.Model):
    class Decision(models.TextChoices):
        ACCEPT = "accept", _("Accepted")
        REJECT = "reject", _("Rejected")
        ADJUST = "adjust", _("Adjusted")

    note = models.ForeignKey(
        "corpus.Note", on_delete=models.CASCADE, related_name="peak_decisions", verbose_name=_("note")
    )
    task = models.ForeignKey(
        "corpus.Task", on_delete=models.PROTECT, related_name="peak_decisions", verbose_name=_("task")
    )
    model_version = models.ForeignKey(
        "pipeline.ModelVersion",
        on_delete=models.PROTECT,
        related_name="peak_decisions",
        verbose_name=_("model version"),
    )
    method = models.CharField(max_length=20, verbose_name=_("method"))
    template = models.CharField(max_length=500, verbose_name=_("prompt template"))
    config_key = models.CharField(
        max_length=64,
        help_text=_("RelevanceConfig.key of the map whose peak this is"),
        verbose_name=_("configuration key"),
    )
    profile = models.ForeignKey(
        "pipeline.PeakProfile",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="peak_decisions",
        help_text=_("The profile the page was showing"),
        verbose_name=_("peak profile"),
    )
    params = models.JSONField(
        default=dict,
        help_text=_("kernel_size, sigma, lower, upper in effect when deciding"),
        verbose_name=_("peak parameters"),
    )
    start = models.PositiveIntegerField(help_text=_("Peak start (character offset, as shown)"), verbose_name=_("start"))
    end = models.PositiveIntegerField(help_text=_("Peak end (exclusive)"), verbose_name=_("end"))
    decision = models.CharField(max_length=10, choices=Decision.choices, verbose_name=_("decision"))
    adjusted_start = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("adjusted start"))
    adjusted_end = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("adjusted end"))
    comment = models.TextField(blank=True, verbose_name=_("comment"))
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="peak_decisions", verbose_name=_("reviewer")
    )
    guideline_version = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=_("corpus.TaskGuideline version of the task shown when deciding; empty: none"),
        verbose_name=_("guideline version"),
    )
    active_ms = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=_("Active time from showing the peak to deciding, idle gaps cut; empty: not measured"),
        verbose_name=_("active time (ms)"),
    )
    version = models.PositiveIntegerField(default=1, verbose_name=_("version"))
    previous = models.JSONField(
        null=True,
        blank=True,
        help_text=_("The row's state before its last change (undo)"),
        verbose_name=_("previous state"),
    )
    batch = models.UUIDField(
        null=True,
        blank=True,
        db_index=True,
        help_text=_("Decisions made together by one action (accept the rest: webapp.review.bulk), undone together"),
        verbose_name=_("batch"),
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    updated = models.DateTimeField(auto_now=True, verbose_name=_("updated"))

    project_paths = ("note__corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        verbose_name = _("peak decision")
        verbose_name_plural = _("peak decisions")
        ordering = ["note", "task", "start", "reviewer"]
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "note",
                    "task",
                    "model_version",
                    "method",
                    "template",
                    "config_key",
                    "start",
                    "end",
                    "reviewer",
                ],
                name="review_peakdecision_one_per_reviewer",
            ),
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="review_peakdecision_span_nonempty"),
            models.CheckConstraint(
                condition=(
                    Q(
                        decision="adjust",
                        adjusted_start__isnull=False,
                        adjusted_end__isnull=False,
                        adjusted_start__lt=F("adjusted_end"),
                    )
                    | (~Q(decision="adjust") & Q(adjusted_start__isnull=True, adjusted_end__isnull=True))
                ),
                name="review_peakdecision_adjusted_span",
            ),
            models.CheckConstraint(
                condition=Q(decision__in=["accept", "reject", "adjust"]), name="review_peakdecision_decision_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["note", "task"], name="review_decision_note_task"),
            models.Index(fields=["reviewer", "updated"], name="review_decision_reviewer"),
            models.Index(fields=["task", "model_version"], name="review_decision_task_model"),
        ]

    def __str__(self):
        return gettext("%(reviewer)s %(decision)s note=%(note)s task=%(task)s [%(start)s, %(end)s)") % {
            "reviewer": self.reviewer_id,
            "decision": decision_word(self.decision),
            "note": self.note_id,
            "task": self.task_id,
            "start": self.start,
            "end": self.end,
        }

    @property
    def kept(self) -> bool:
        """Accept and adjust keep the peak; reject removes it."""
        return self.decision != self.Decision.REJECT

    @property
    def outcome(self) -> tuple:
        """What the decision says, for comparing two reviewers: reject, accept, or adjust to a span."""
        if self.decision == self.Decision.ADJUST:
            return ("adjust", self.adjusted_start, self.adjusted_end)
        return (self.decision,)

    def state(self) -> dict:
        return {
            "decision": self.decision,
            "adjusted_start": self.adjusted_start,
            "adjusted_end": self.adjusted_end,
            "comment": self.comment,
            "profile": self.profile_id,
            "params": self.params,
            "guideline_version": self.guideline_version,
            "active_ms": self.active_ms,
        }


class ValidationSetQuerySet(ProjectScopedQuerySet):
    def holding_out(self):
        """Sets whose notes dataset builds leave out: those not retired."""
        return self.filter(retired__isnull=True)


class ValidationSet(ConfigKeyDefault, models.Model):
    corpus = models.ForeignKey(
        "corpus.Corpus", on_delete=models.CASCADE, related_name="validation_sets", verbose_name=_("corpus")
    )
    model_version = models.ForeignKey(
        "pipeline.ModelVersion", on_delete=models.PROTECT, related_name="+", verbose_name=_("model version")
    )
    method = models.CharField(max_length=20, verbose_name=_("method"))
    template = models.CharField(max_length=500, verbose_name=_("prompt template"))
    config_key = models.CharField(
        max_length=64, help_text=_("RelevanceConfig.key of the maps judged"), verbose_name=_("configuration key")
    )
    name = models.CharField(max_length=200, verbose_name=_("name"))
    seed = models.IntegerField(default=0, verbose_name=_("seed"))
    size = models.PositiveIntegerField(
        default=100, help_text=_("Notes asked for (items may hold fewer)"), verbose_name=_("notes asked for")
    )
    items = models.JSONField(help_text=_("[[note_id, task_id], ...] in judging order"), verbose_name=_("items"))
    notes_available = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=_("Notes of the corpus with maps of the selection, counted when the draw found fewer than asked"),
        verbose_name=_("notes available"),
    )
    grid = models.JSONField(
        help_text=_("[{kernel_size, sigma, lower, upper}, ...] candidate settings"),
        verbose_name=_("candidate settings"),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, verbose_name=_("created by")
    )
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    retired = models.DateTimeField(
        null=True, blank=True, help_text=_("When its notes stopped being held out"), verbose_name=_("retired")
    )
    retired_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("retired by"),
    )

    objects = ValidationSetQuerySet.as_manager()

    project_paths = ("corpus__project",)  # webapp.projects.scoping

    class Meta:
        verbose_name = _("validation set")
        verbose_name_plural = _("validation sets")
        ordering = ["-created"]
        constraints = [models.CheckConstraint(condition=~Q(name=""), name="review_validationset_name_not_blank")]

    def __str__(self):
        # English keeps "(1 notes)" as it always read; the catalogs give each language its forms
        count = len(self.items)
        return ngettext("%(name)s (%(notes)s notes)", "%(name)s (%(notes)s notes)", count) % {
            "name": self.name,
            "notes": count,
        }

    @property
    def note_ids(self) -> list[int]:
        return [int(note_id) for note_id, _ in self.items]

    @property
    def is_retired(self) -> bool:
        return self.retired is not None

    @property
    def shortfall(self) -> str:
        """Why the set holds fewer notes than asked, in words; empty when it holds them all."""
        if len(self.items) >= self.size:
            return ""
        asked = ngettext(
            "%(asked)s note asked for, %(drawn)s drawn", "%(asked)s notes asked for, %(drawn)s drawn", self.size
        ) % {"asked": self.size, "drawn": len(self.items)}
        if self.notes_available is None:
            return gettext(
                "%(asked)s: fewer notes had maps for this model version, method and template when it was drawn."
            ) % {"asked": asked}
        return ngettext(
            "%(asked)s: only %(available)s note has relevance maps of %(model)s · %(method)s · this template "
            "and configuration in this corpus (a set holds each note once).",
            "%(asked)s: only %(available)s notes have relevance maps of %(model)s · %(method)s · this template "
            "and configuration in this corpus (a set holds each note once).",
            self.notes_available,
        ) % {"asked": asked, "available": self.notes_available, "model": self.model_version.name, "method": self.method}


class ValidationJudgement(models.Model):
    validation_set = models.ForeignKey(
        ValidationSet, on_delete=models.CASCADE, related_name="judgements", verbose_name=_("validation set")
    )
    note = models.ForeignKey("corpus.Note", on_delete=models.CASCADE, related_name="+", verbose_name=_("note"))
    task = models.ForeignKey("corpus.Task", on_delete=models.PROTECT, related_name="+", verbose_name=_("task"))
    setting = models.PositiveSmallIntegerField(help_text=_("Index into the set's grid"), verbose_name=_("setting"))
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("reviewer")
    )
    reasonable = models.BooleanField(verbose_name=_("reasonable"))
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    updated = models.DateTimeField(auto_now=True, verbose_name=_("updated"))

    class Meta:
        verbose_name = _("validation judgement")
        verbose_name_plural = _("validation judgements")
        ordering = ["validation_set", "note", "setting"]
        constraints = [
            models.UniqueConstraint(
                fields=["validation_set", "note", "task", "setting", "reviewer"],
                name="review_judgement_one_per_reviewer",
            ),
        ]

    def __str__(self):
        return gettext("set %(set)s note %(note)s setting %(setting)s: %(reasonable)s") % {
            "set": self.validation_set_id,
            "note": self.note_id,
            "setting": self.setting,
            "reasonable": truth_word(self.reasonable),
        }


class MapSample(ConfigKeyDefault, models.Model):
    corpus = models.ForeignKey("corpus.Corpus", on_delete=models.CASCADE, related_name="+", verbose_name=_("corpus"))
    model_version = models.ForeignKey(
        "pipeline.ModelVersion", on_delete=models.CASCADE, related_name="+", verbose_name=_("model version")
    )
    method = models.CharField(max_length=20, verbose_name=_("method"))
    template = models.CharField(max_length=500, verbose_name=_("prompt template"))
    config_key = models.CharField(
        max_length=64, help_text=_("RelevanceConfig.key of the maps sampled"), verbose_name=_("configuration key")
    )
    seed = models.IntegerField(default=0, verbose_name=_("seed"))
    size = models.PositiveIntegerField(verbose_name=_("size"))
    population = models.PositiveIntegerField(
        help_text=_("Matching maps when the sample was drawn"), verbose_name=_("population")
    )
    map_ids = models.JSONField(verbose_name=_("map ids"))
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    class Meta:
        verbose_name = _("map sample")
        verbose_name_plural = _("map samples")
        constraints = [
            models.UniqueConstraint(
                fields=["corpus", "model_version", "method", "template", "config_key", "seed", "size"],
                name="review_mapsample_unique",
            ),
        ]

    def __str__(self):
        return gettext("sample of %(sampled)s / %(population)s maps") % {
            "sampled": len(self.map_ids),
            "population": self.population,
        }


# ---------------------------------------------------------------- team review: rounds and adjudication


class ReviewRound(ConfigKeyDefault, models.Model):
    """A team's review of a corpus: which pairs, under which map and peak setting, by whom, how
    many times each (see webapp.review.rounds for the assignment and claim rules).

    The pairs (RoundPair) are drawn once, when the round is created: the (note, task) pairs of
    the corpus and the round's tasks with a map of the round's model version, method, template
    and configuration that has at least one peak under the round's profile (its peaks are stored
    with the pair). `k`: how many reviewers judge each pair. `guideline`: Markdown shown beside
    each task's guideline on every page of the round (sanitised, webapp.lib.markdown_html).
    `agreement_needed`: the confidence rule of adjudication (webapp.review.adjudication)."""

    corpus = models.ForeignKey("corpus.Corpus", on_delete=models.CASCADE, related_name="review_rounds")
    name = models.CharField(max_length=200)
    tasks = models.ManyToManyField("corpus.Task", related_name="+")
    model_version = models.ForeignKey("pipeline.ModelVersion", on_delete=models.PROTECT, related_name="+")
    method = models.CharField(max_length=20)
    template = models.CharField(max_length=500)
    config_key = models.CharField(max_length=64, help_text=_("RelevanceConfig.key of the maps reviewed"))
    profile = models.ForeignKey(
        "pipeline.PeakProfile",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("The peak setting of the round; empty: the paper's"),
    )
    k = models.PositiveSmallIntegerField(default=2, help_text=_("Reviewers judging each pair"))
    agreement_needed = models.PositiveSmallIntegerField(
        default=100,
        help_text=_(
            "The confidence rule: the percent of a peak's reviewers who must agree on keeping or rejecting it; "
            "below it the peak goes to a curator (100: any disagreement does)"
        ),
    )
    guideline = models.TextField(blank=True, help_text=_("Markdown: what this round asks, beside the task guidelines"))
    order = models.CharField(
        max_length=20,
        choices=[
            ("drawn", _("as drawn (note, task)")),
            ("disagreement", _("disagreement so far first")),
            ("uncertainty", _("the model's uncertainty first (peaks nearest the threshold)")),
            ("stratified", _("random, stratified across tasks")),
        ],
        default="drawn",
        help_text=_("Which pairs the round's queue serves first (webapp.review.orders)"),
    )
    order_seed = models.PositiveIntegerField(default=0, help_text=_("The seed of the stratified random order"))
    reviewers = models.ManyToManyField(settings.AUTH_USER_MODEL, through="RoundReviewer", related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    project_paths = ("corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="review_round_name_not_blank"),
            models.CheckConstraint(condition=Q(k__gte=1), name="review_round_k_positive"),
            models.CheckConstraint(
                condition=Q(agreement_needed__gte=50, agreement_needed__lte=100), name="review_round_agreement_range"
            ),
        ]

    def __str__(self):
        return f"{self.name} (k={self.k})"

    @property
    def params(self):
        from ml.peaks import PAPER

        return self.profile.params if self.profile else PAPER

    @property
    def guideline_html(self) -> str:
        from webapp.lib.markdown_html import render_markdown

        return render_markdown(self.guideline)


class RoundReviewer(models.Model):
    """A reviewer of a round; `removed`: taken off it (their open claims went back)."""

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="members")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    added = models.DateTimeField(auto_now_add=True)
    removed = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["round", "id"]
        constraints = [models.UniqueConstraint(fields=["round", "reviewer"], name="review_roundreviewer_once")]

    def __str__(self):
        return gettext("%(reviewer)s in round %(round)s") % {"reviewer": self.reviewer_id, "round": self.round_id}


class RoundPair(models.Model):
    """A (note, task) pair of a round, at `position` in the round's order, with its peaks
    ([[start, end], ...], character spans under the round's setting) as drawn."""

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="pairs")
    position = models.PositiveIntegerField()
    note = models.ForeignKey("corpus.Note", on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey("corpus.Task", on_delete=models.PROTECT, related_name="+")
    peaks = models.JSONField(default=list)

    class Meta:
        ordering = ["round", "position"]
        constraints = [
            models.UniqueConstraint(fields=["round", "position"], name="review_roundpair_position"),
            models.UniqueConstraint(fields=["round", "note", "task"], name="review_roundpair_once"),
        ]

    def __str__(self):
        return gettext("round %(round)s #%(position)s: note %(note)s task %(task)s") % {
            "round": self.round_id,
            "position": self.position,
            "note": self.note_id,
            "task": self.task_id,
        }


class RoundClaimQuerySet(models.QuerySet):
    def live(self, now):
        """Claims that hold a judgement slot: done, or open with a lease not yet expired."""
        return self.filter(Q(done__isnull=False) | Q(expires__gt=now))

    def open(self, now):
        return self.filter(done__isnull=True, expires__gt=now)


class RoundClaim(models.Model):
    """A reviewer's claim on a pair of a round: open until `done` (every peak of the pair
    decided), held by a lease (`expires`) renewed by each decision on the pair; an open claim
    whose lease expired holds nothing and may be taken over."""

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="claims")
    pair = models.ForeignKey(RoundPair, on_delete=models.CASCADE, related_name="claims")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    claimed = models.DateTimeField()
    expires = models.DateTimeField()
    done = models.DateTimeField(null=True, blank=True)

    objects = RoundClaimQuerySet.as_manager()

    class Meta:
        ordering = ["round", "pair", "claimed"]
        constraints = [models.UniqueConstraint(fields=["pair", "reviewer"], name="review_roundclaim_once")]
        indexes = [models.Index(fields=["round", "reviewer"], name="review_claim_round_reviewer")]

    def __str__(self):
        values = {"reviewer": self.reviewer_id, "pair": self.pair_id}
        if self.done:
            return gettext("%(reviewer)s on pair %(pair)s (done)") % values
        return gettext("%(reviewer)s on pair %(pair)s") % values


class Adjudication(models.Model):
    """A curator's final decision on a peak (note, task, character span): keep (accept) or
    reject. It overrides the reviewers' majority for dataset builds (decisions.rejected_spans).
    One row per peak; a change keeps the previous state (`previous`) and counts `version`."""

    class Decision(models.TextChoices):
        ACCEPT = "accept", _("Accepted")
        REJECT = "reject", _("Rejected")

    note = models.ForeignKey("corpus.Note", on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey("corpus.Task", on_delete=models.PROTECT, related_name="+")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    decision = models.CharField(max_length=10, choices=Decision.choices)
    comment = models.TextField(blank=True)
    curator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    round = models.ForeignKey(ReviewRound, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    version = models.PositiveIntegerField(default=1)
    previous = models.JSONField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    project_paths = ("note__corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["note", "task", "start"]
        constraints = [
            models.UniqueConstraint(fields=["note", "task", "start", "end"], name="review_adjudication_one_per_peak"),
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="review_adjudication_span_nonempty"),
            models.CheckConstraint(
                condition=Q(decision__in=["accept", "reject"]), name="review_adjudication_decision_valid"
            ),
        ]

    def __str__(self):
        return gettext("%(decision)s note=%(note)s task=%(task)s [%(start)s, %(end)s)") % {
            "decision": decision_word(self.decision),
            "note": self.note_id,
            "task": self.task_id,
            "start": self.start,
            "end": self.end,
        }

    @property
    def kept(self) -> bool:
        return self.decision == self.Decision.ACCEPT


class ValidationVerdict(models.Model):
    """A curator's final answer for one note of a validation set under one setting of its grid,
    where its reviewers split: reasonable or not. It replaces their majority in the set's tally
    (webapp.review.validation.tally). One row per (set, note, task, setting); a change counts
    `version` and keeps the previous answer in `previous`."""

    validation_set = models.ForeignKey("review.ValidationSet", on_delete=models.CASCADE, related_name="verdicts")
    note = models.ForeignKey("corpus.Note", on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey("corpus.Task", on_delete=models.PROTECT, related_name="+")
    setting = models.PositiveSmallIntegerField(help_text=_("Index into the set's grid"))
    reasonable = models.BooleanField()
    curator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    version = models.PositiveIntegerField(default=1)
    previous = models.BooleanField(null=True, blank=True, help_text=_("The answer this one replaced"))
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    project_paths = ("validation_set__corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["validation_set", "note", "setting"]
        constraints = [
            models.UniqueConstraint(
                fields=["validation_set", "note", "task", "setting"], name="review_verdict_one_per_setting"
            ),
        ]

    def __str__(self):
        return gettext("set %(set)s note %(note)s setting %(setting)s: %(reasonable)s (curator)") % {
            "set": self.validation_set_id,
            "note": self.note_id,
            "setting": self.setting,
            "reasonable": truth_word(self.reasonable),
        }


# ---------------------------------------------------------------- stored peaks


class MapPeaks(models.Model):
    """The peaks of `map` under the peak parameters whose key is `params_key`
    (peakstore.params_key), as character spans of the note ([[start, end], ...], in order).

    Valid only while the map is what they were computed from: `tokens_id` (its offsets) and
    `digest` (peakstore.ScoresDigest of its scores) must equal the map's; a map computed again
    (RelevanceMap.objects.store replaces its scores in place) makes the row stale, and its next
    reader recomputes it. `fits`: the map's offsets fit the note's text (otherwise no peaks)."""

    map = models.ForeignKey("pipeline.RelevanceMap", on_delete=models.CASCADE, related_name="+")
    params_key = models.CharField(max_length=64)
    tokens_id = models.BigIntegerField()
    digest = models.CharField(max_length=64)
    fits = models.BooleanField()
    n_peaks = models.PositiveIntegerField()
    spans = models.JSONField(default=list)
    computed = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["map", "params_key"], name="review_mappeaks_once")]

    def __str__(self):
        # English keeps "1 peaks" as it always read; the catalogs give each language its forms
        return ngettext(
            "%(peaks)s peaks of map %(map)s under %(params)s",
            "%(peaks)s peaks of map %(map)s under %(params)s",
            self.n_peaks,
        ) % {"peaks": self.n_peaks, "map": self.map_id, "params": self.params_key[:8]}


class StoredPeak(models.Model):
    """One peak of a MapPeaks row, with its map's note and task, so that "has this reviewer
    decided every peak of the pair" is one indexed anti-join against PeakDecision."""

    peaks = models.ForeignKey(MapPeaks, on_delete=models.CASCADE, related_name="peaks")
    note = models.ForeignKey(
        "corpus.Note", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    task = models.ForeignKey(
        "corpus.Task", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["peaks", "start", "end"], name="review_storedpeak_span")]

    def __str__(self):
        return gettext("[%(start)s, %(end)s) of %(peaks)s") % {
            "start": self.start,
            "end": self.end,
            "peaks": self.peaks_id,
        }


# ---------------------------------------------------------------- spans the model missed


class AddedSpan(models.Model):
    """Words a reviewer marked as evidence for a task where the model showed no peak
    (webapp.review.spans holds the rules): a character span of the note snapped to whole words as
    peaks are, by one reviewer, under the task's guideline version the page showed, with the active
    time it took. `round`: the review round the page was reviewing in (its pair's judgement holds
    the span; None outside rounds). A change counts `version`; removing deletes the row (audited)."""

    note = models.ForeignKey("corpus.Note", on_delete=models.CASCADE, related_name="added_spans")
    task = models.ForeignKey("corpus.Task", on_delete=models.PROTECT, related_name="+")
    start = models.PositiveIntegerField(help_text=_("Character offset of the first word"))
    end = models.PositiveIntegerField(help_text=_("End of the last word (exclusive)"))
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="added_spans")
    round = models.ForeignKey(ReviewRound, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    guideline_version = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("corpus.TaskGuideline version shown when the span was added; empty: none")
    )
    active_ms = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Active time spent marking the span, idle gaps cut; empty: not measured")
    )
    comment = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    project_paths = ("note__corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["note", "task", "start", "reviewer"]
        constraints = [
            models.UniqueConstraint(fields=["note", "task", "reviewer", "start", "end"], name="review_addedspan_once"),
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="review_addedspan_nonempty"),
        ]
        indexes = [models.Index(fields=["note", "task"], name="review_addedspan_pair")]

    def __str__(self):
        return gettext("span [%(start)s, %(end)s) note=%(note)s task=%(task)s by %(reviewer)s") % {
            "note": self.note_id,
            "task": self.task_id,
            "start": self.start,
            "end": self.end,
            "reviewer": self.reviewer_id,
        }


class SpanAdjudication(models.Model):
    """A curator's final choice on added spans of a round's pair on which its reviewers disagree
    (webapp.review.span_rounds): the disputed group is named by its extent [start, end) (the union
    of its overlapping spans); `decision` accept keeps [chosen_start, chosen_end) as gold evidence,
    reject keeps none of it. One row per (round, note, task, extent); a change counts `version` and
    keeps `previous`."""

    class Decision(models.TextChoices):
        ACCEPT = "accept", _("Accepted")
        REJECT = "reject", _("Rejected")

    round = models.ForeignKey(ReviewRound, on_delete=models.CASCADE, related_name="+")
    note = models.ForeignKey("corpus.Note", on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey("corpus.Task", on_delete=models.PROTECT, related_name="+")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    decision = models.CharField(max_length=10, choices=Decision.choices)
    chosen_start = models.PositiveIntegerField(null=True, blank=True)
    chosen_end = models.PositiveIntegerField(null=True, blank=True)
    comment = models.TextField(blank=True)
    curator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    version = models.PositiveIntegerField(default=1)
    previous = models.JSONField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    project_paths = ("note__corpus__project",)  # webapp.projects.scoping
    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["round", "note", "task", "start"]
        constraints = [
            models.UniqueConstraint(fields=["round", "note", "task", "start", "end"], name="review_spanadj_once"),
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="review_spanadj_nonempty"),
            models.CheckConstraint(
                condition=Q(decision="reject") | Q(chosen_start__isnull=False, chosen_end__isnull=False),
                name="review_spanadj_accept_has_span",
            ),
        ]

    def __str__(self):
        return gettext("%(decision)s added spans [%(start)s, %(end)s) note=%(note)s round=%(round)s") % {
            "decision": decision_word(self.decision),
            "start": self.start,
            "end": self.end,
            "note": self.note_id,
            "round": self.round_id,
        }

    @property
    def kept(self) -> bool:
        return self.decision == self.Decision.ACCEPT


# ---------------------------------------------------------------- the stored review report


class ReportSnapshot(WorkUnit):
    """The review report's figures for one scope (the projects a reader sees, and the report's
    corpus, model version and method filters), computed in the background once per change of
    what they are computed from (webapp.review.report_store holds the rules) and read by the page
    and its CSV. `stamp`: the fingerprint of the decisions, adjudications and spans the figures
    came from; a page that finds another one shows these figures as stale and queues this unit."""

    scope = models.CharField(max_length=600, unique=True, help_text=_("projects, corpus, model, method (report_store)"))
    project_ids = models.JSONField(null=True, blank=True, help_text=_("the projects' ids; empty: every project"))
    corpus = models.ForeignKey("corpus.Corpus", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    model_version = models.ForeignKey(
        "pipeline.ModelVersion", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    method = models.CharField(max_length=40, blank=True)
    stamp = models.CharField(max_length=300, blank=True, help_text=_("fingerprint of the inputs of `figures`"))
    figures = models.JSONField(null=True, blank=True)
    computed = models.DateTimeField(null=True, blank=True, help_text=_("when `figures` were computed"))
    compute_seconds = models.FloatField(null=True, blank=True)

    def __str__(self):
        return gettext("report %(scope)s (%(status)s)") % {"scope": self.scope, "status": choice_word(self, "status")}
