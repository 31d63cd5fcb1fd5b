"""Pages of review rounds: list and create, progress and reviewers, a reviewer's queue inside a
round, the curator's adjudication of disputed peaks, and the export of the team's work. Each view:
an access helper (403/404), one domain call, render or redirect."""

from urllib.parse import urlencode

from django.contrib import messages
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.tasks import current_guideline
from webapp.deid import gate
from webapp.lib import rendering
from webapp.projects.roles import Capability, has_capability
from webapp.review import access, adjudication, orders, rounds, selection, team_export, timing
from webapp.review.forms import RoundForm, RoundOrderForm


def round_list(request, corpus_id):
    corpus = access.corpus_for(request.user, corpus_id)
    sel = selection.for_corpus(corpus, request.POST or request.GET)
    can_create = has_capability(request.user, Capability.LAUNCH, corpus.project_id)
    form = None
    if request.method == "POST":
        corpus = access.round_corpus_for(request.user, corpus_id)
        project_id = corpus.project_id
        form = RoundForm(request.POST, project_id=project_id, reviewers=rounds.reviewer_candidates(project_id))
        if form.is_valid():
            data = form.cleaned_data
            try:
                rnd = rounds.create_round(
                    corpus,
                    name=data["name"],
                    tasks=data["tasks"],
                    model=sel.model,
                    method=sel.method,
                    template=sel.template,
                    config_key=sel.config,
                    profile=sel.profile,
                    k=data["k"],
                    reviewers=data["reviewers"],
                    guideline=data["guideline"],
                    agreement_needed=data["agreement_needed"],
                    order=data["order"],
                    order_seed=data["order_seed"],
                    actor=request.user,
                )
            except rounds.RoundError as exc:
                form.add_error(None, str(exc))
            else:
                pairs = rnd.pairs.count()
                said = ngettext(  # the English says "pairs" for one too; a translation may agree with the count
                    "Round %(name)s: %(pairs)s pairs, each for %(k)s reviewers.",
                    "Round %(name)s: %(pairs)s pairs, each for %(k)s reviewers.",
                    pairs,
                )
                messages.success(request, said % {"name": rnd.name, "pairs": pairs, "k": rnd.k})
                return redirect("review:round", rnd.pk)
    elif can_create:
        form = RoundForm(
            initial={"name": _("%(corpus)s round") % {"corpus": corpus.name}},
            project_id=corpus.project_id,
            reviewers=rounds.reviewer_candidates(corpus.project_id),
        )
    context = {
        "nav": "review",
        "corpus": corpus,
        "sel": sel,
        "form": form,
        "rounds": corpus.review_rounds.select_related("model_version", "profile"),
    }
    return render(request, "review/rounds.html", context)


def round_detail(request, round_id):
    rnd = access.round_for(request.user, round_id)
    project = rnd.corpus.project_id
    context = {
        "nav": "review",
        "round": rnd,
        "corpus": rnd.corpus,
        "progress": rounds.progress(rnd),
        "summary": adjudication.summary(adjudication.round_peaks(rnd)),
        "member": rounds.is_member(rnd, request.user),
        "can_manage": has_capability(request.user, Capability.LAUNCH, project),
        "can_adjudicate": has_capability(request.user, Capability.ADJUDICATE, project),
        "can_export": has_capability(request.user, Capability.EXPORT, project),
        "gate": gate.gate_for([rnd.corpus], request.user),
        "candidates": [u for u in rounds.reviewer_candidates(project) if not rounds.is_member(rnd, u)],
        "time": timing.round_time(rnd),
        "orders": list(orders.ORDERS.items()),
        "order_changes": orders.changes(rnd),
    }
    return render(request, "review/round.html", context)


def round_queue(request, round_id):
    rnd = access.round_for(request.user, round_id, Capability.REVIEW)
    try:
        claim = rounds.next_claim(rnd, request.user)
    except rounds.RoundError as exc:
        messages.error(request, str(exc))
        return redirect("review:round", rnd.pk)
    if claim is None:
        return render(request, "review/round_queue.html", {"nav": "review", "round": rnd, "corpus": rnd.corpus,
                                                           "progress": rounds.progress(rnd)})  # fmt: skip
    return redirect(note_url(rnd, claim.pair))


def note_url(rnd, pair) -> str:
    """The note page of a round's pair, under the round's map and peak setting."""
    query = {
        "task": pair.task_id,
        "model": rnd.model_version_id,
        "method": rnd.method,
        "template": rnd.template,
        "config": rnd.config_key,
        "round": rnd.pk,
    }
    if rnd.profile_id:
        query["profile"] = rnd.profile_id
    return reverse("review:note", args=[rnd.corpus_id, pair.note_id]) + "?" + urlencode(query)


@require_POST
def round_order(request, round_id):
    """Change what the round's queue serves first (LAUNCH); audited (webapp.review.orders)."""
    rnd = access.round_for(request.user, round_id, Capability.LAUNCH)
    form = RoundOrderForm(request.POST)
    if form.is_valid():
        orders.change(rnd, form.cleaned_data["order"], form.cleaned_data["order_seed"], actor=request.user)
        said = _("Round %(name)s now serves %(order)s.") % {"name": rnd.name, "order": rnd.get_order_display()}
        messages.success(request, said)
    else:
        messages.error(request, _("Choose one of the orders offered (and a seed of 0 or more)."))
    return redirect("review:round", rnd.pk)


@require_POST
def round_reviewer(request, round_id):
    """Add or remove a reviewer (LAUNCH); the reviewer is named by id, and an id outside the
    round's project is unknown (404): no username of another project is ever printed."""
    rnd = access.round_for(request.user, round_id, Capability.LAUNCH)
    user = access.round_reviewer_for(rnd, request.POST.get("reviewer"))
    try:
        if request.POST.get("action") == "remove":
            returned = rounds.remove_reviewer(rnd, user, actor=request.user)
            said = ngettext(  # "claim(s)" in English either way; a translation may agree with the count
                "%(reviewer)s is off the round; %(count)s open claim(s) went back.",
                "%(reviewer)s is off the round; %(count)s open claim(s) went back.",
                returned,
            )
            messages.success(request, said % {"reviewer": user.get_username(), "count": returned})
        else:
            rounds.add_reviewer(rnd, user, actor=request.user)
            messages.success(request, _("%(reviewer)s now reviews in this round.") % {"reviewer": user.get_username()})
    except rounds.RoundError as exc:
        messages.error(request, str(exc))
    return redirect("review:round", rnd.pk)


def adjudicate(request, round_id):
    rnd = access.round_for(request.user, round_id, Capability.ADJUDICATE)
    if request.method == "POST":
        try:
            adjudication.adjudicate(
                rnd,
                request.user,
                note_id=int(request.POST["note"]),
                task_id=int(request.POST["task"]),
                start=int(request.POST["start"]),
                end=int(request.POST["end"]),
                decision=request.POST.get("decision", ""),
                comment=request.POST.get("comment", ""),
            )
        except (KeyError, ValueError, adjudication.AdjudicationError) as exc:
            messages.error(request, _("Not recorded: %(reason)s") % {"reason": exc})
            return redirect(f"{reverse('review:adjudicate', args=[rnd.pk])}?peak={request.POST.get('index', 0)}")
        return redirect("review:adjudicate", rnd.pk)
    peaks = adjudication.round_peaks(rnd)
    disputed = [p for p in peaks if p.disputed]
    index = _int(request.GET.get("peak"))
    if index is None or not 0 <= index < len(disputed):
        index = next((i for i, p in enumerate(disputed) if p.adjudication is None), 0)
    peak = disputed[index] if disputed else None
    context = {
        "nav": "review",
        "round": rnd,
        "corpus": rnd.corpus,
        "summary": adjudication.summary(peaks),
        "disputed": disputed,
        "index": index,
        "peak": peak,
        "excerpt": adjudication.excerpt_html(rnd, peak) if peak else "",
        "legend": rendering.legend(),
        "guideline": current_guideline(peak.pair.task, rnd.corpus.project_id) if peak else None,
    }
    return render(request, "review/adjudicate.html", context)


def round_export(request, round_id, fmt):
    """The team's work as a file that leaves the server: note ids and reviewers' comments, so it
    passes the gate (webapp.deid.gate) as the corpus's other exports do."""
    rnd = access.round_for(request.user, round_id, Capability.EXPORT)
    try:
        confirm = gate.confirmed(request.GET)
        gate.release([rnd.corpus], request.user, confirm, what="review team export", obj=rnd, format=fmt)
    except gate.Refused as exc:
        messages.error(request, exc.reason)
        return redirect("review:round", rnd.pk)
    record(request.user, AuditEvent.Action.EXPORT, rnd, kind="review_round", format=fmt)
    if fmt == "csv":
        response = StreamingHttpResponse(team_export.csv_lines(rnd), content_type="text/csv; charset=utf-8")
    else:
        response = StreamingHttpResponse(team_export.jsonl_lines(rnd), content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="review-round-{rnd.pk}.{fmt}"'
    return response


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
