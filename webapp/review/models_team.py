"""Review as team work: rounds over a corpus with reviewers and an overlap k, claims on their
pairs, and curators' final decisions on disputed peaks (webapp.review.rounds and
webapp.review.adjudication hold the rules). Imported by webapp.review.models.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from webapp.projects.scoping import ProjectScopedQuerySet
from webapp.review.models import ConfigKeyDefault


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
    config_key = models.CharField(max_length=64, help_text="RelevanceConfig.key of the maps reviewed")
    profile = models.ForeignKey(
        "pipeline.PeakProfile",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The peak setting of the round; empty: the paper's",
    )
    k = models.PositiveSmallIntegerField(default=2, help_text="Reviewers judging each pair")
    agreement_needed = models.PositiveSmallIntegerField(
        default=100,
        help_text="The confidence rule: the percent of a peak's reviewers who must agree on keeping or rejecting it; "
        "below it the peak goes to a curator (100: any disagreement does)",
    )
    guideline = models.TextField(blank=True, help_text="Markdown: what this round asks, beside the task guidelines")
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
        return f"{self.reviewer_id} in round {self.round_id}"


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
        return f"round {self.round_id} #{self.position}: note {self.note_id} task {self.task_id}"


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
        return f"{self.reviewer_id} on pair {self.pair_id}{' (done)' if self.done else ''}"


class Adjudication(models.Model):
    """A curator's final decision on a peak (note, task, character span): keep (accept) or
    reject. It overrides the reviewers' majority for dataset builds (decisions.rejected_spans).
    One row per peak; a change keeps the previous state (`previous`) and counts `version`."""

    class Decision(models.TextChoices):
        ACCEPT = "accept", "Accepted"
        REJECT = "reject", "Rejected"

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
        return f"{self.decision} note={self.note_id} task={self.task_id} [{self.start}, {self.end})"

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
    setting = models.PositiveSmallIntegerField(help_text="Index into the set's grid")
    reasonable = models.BooleanField()
    curator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    version = models.PositiveIntegerField(default=1)
    previous = models.BooleanField(null=True, blank=True, help_text="The answer this one replaced")
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
        return f"set {self.validation_set_id} note {self.note_id} setting {self.setting}: {self.reasonable} (curator)"
