"""A corpus's gate and residual scan on its page (webapp.deid.gate, webapp.deid_ops.scanning): whether
its data may leave, the project admin's "mark de-identified" (confirmed, audited) and taking it
back, and the residual scan: launched by those who may launch work, its latest result shown to
every member, polled while it runs (the poll ends, 286, once it has ended)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.corpus.access import corpus_for
from webapp.deid import gate
from webapp.deid_ops import scanning
from webapp.projects.roles import Capability, has_capability


def scan_card_context(corpus, user) -> dict:
    """What the corpus page's gate-and-scan card shows (the {% deid_gate_card %} tag and its poll)."""
    latest = scanning.latest(corpus)
    return {
        "corpus": corpus,
        "scan": latest,
        "polling": latest is not None and latest.is_active,
        "may_scan": has_capability(user, Capability.LAUNCH, corpus.project_id),
        "may_mark": gate.is_project_admin(user, corpus.project_id),
    }


def corpus_scan(request, corpus_id):
    """GET: the card (htmx: its live part while a scan runs). POST: launch a residual scan."""
    if request.method != "POST":
        corpus = corpus_for(request.user, corpus_id)
        context = scan_card_context(corpus, request.user)
        if request.htmx:
            status = 200 if context["polling"] else HttpResponseStopPolling.status_code
            return render(request, "deid/scan_card.html#scan-live", context, status=status)
        return redirect("corpus:detail", corpus.pk)
    corpus = corpus_for(request.user, corpus_id, Capability.LAUNCH)
    try:
        scanning.launch(corpus, actor=request.user)
    except scanning.ScanError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            _("Corpus %(corpus)s is queued for a residual scan; this page shows its counts.") % {"corpus": corpus.name},
        )
    return redirect("corpus:detail", corpus.pk)


@require_POST
def corpus_mark(request, corpus_id):
    """A project admin marks the corpus de-identified (its notes were, before they came here:
    the confirmation box), or takes the mark back. Both audited (gate.mark_deidentified)."""
    corpus = corpus_for(request.user, corpus_id)
    deidentified = request.POST.get("deidentified") == "1"
    try:
        changed = gate.mark_deidentified(
            corpus, request.user, confirm=request.POST.get("confirm") == "1", deidentified=deidentified
        )
    except gate.Refused as exc:
        messages.error(request, exc.reason)
    else:
        if not changed:
            messages.info(request, _("Nothing changed."))
        elif deidentified:
            messages.success(
                request, _("Corpus %(corpus)s is marked de-identified: its data may leave.") % {"corpus": corpus.name}
            )
        else:
            messages.success(
                request, _("Corpus %(corpus)s is no longer marked de-identified.") % {"corpus": corpus.name}
            )
    return redirect("corpus:detail", corpus.pk)
