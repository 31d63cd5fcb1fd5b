"""Stored peaks: the peaks of one relevance map under one peak setting, computed once and read
by the review queue, the note page and the decisions (webapp.review.peakstore holds the rules,
including when a row is stale). Imported by webapp.review.models.
"""

from django.db import models


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
        return f"{self.n_peaks} peaks of map {self.map_id} under {self.params_key[:8]}"


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
        return f"[{self.start}, {self.end}) of {self.peaks_id}"
