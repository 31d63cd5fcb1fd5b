"""Review pages. Each view: an access helper (403/404), one domain call, render or redirect.

htmx requests get the fragment they target (`template#partial`); every page also works as a
plain link or form without JavaScript.
"""

from django.contrib import messages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus
from webapp.corpus.tasks import current_guideline
from webapp.lib import rendering
from webapp.pipeline.models import ModelVersion, PeakProfile
from webapp.projects.roles import Capability, capability_required, has_capability
from webapp.review import (
    access,
    actions,
    browse,
    caching,
    catalog,
    comparison,
    noteview,
    queue,
    report_store,
    selection,
    timing,
    tuning,
    validation,
)
from webapp.review.forms import AdoptForm, DecisionForm, SaveProfileForm, ValidationSetForm
from webapp.review.templatetags.review_page import selection_fields


def _note_url(note, sel, **changes) -> str:
    query = sel.query(**changes)
    return reverse("review:note", args=[note.corpus_id, note.pk]) + (f"?{query}" if query else "")


def _note_urls(note) -> dict:
    """The note page's own addresses, which it writes in some twenty links and forms."""
    args = [note.corpus_id, note.pk]
    return {"note_url": reverse("review:note", args=args), "decide_url": reverse("review:decide", args=args)}


def _note_context(request, note, sel, panel, notice=None) -> dict:
    context = {
        **_note_urls(note),
        "nav": "review",
        "note": note,
        "corpus": note.corpus,
        "sel": sel,
        "panel": panel,
        "notice": notice,
        "can_review": has_capability(request.user, Capability.REVIEW, note.corpus.project_id),
        "can_tune": any(has_capability(request.user, c, note.corpus.project_id) for c in access.TUNE),
        "profiles": _profiles(note.corpus.project_id, sel.profile),
        "legend": rendering.legend(),
        "queue_query": sel.query(task=None),  # the queue goes over every task from the current pair on
        "guideline": caching.guideline(sel.task, note.corpus.project_id),
        "round": _round_of(request),
    }
    _rows_html(request, context, panel.peaks, panel.window.index)
    return context


def _rows_html(request, context, rows, window_index) -> None:
    """Each peak row's HTML (noteview.row_html: written in Python, the template's slowest part)."""
    if not rows:
        return
    page = noteview.RowPage(
        decide_url=context["decide_url"],
        csrf_html=format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', get_token(request)),
        fields_html=selection_fields(context) if context["can_review"] else "",
        window_index=window_index,
        guideline_version=getattr(context["guideline"], "version", None) or 0,
        user_id=request.user.pk,
        can_review=context["can_review"],
    )
    for row in rows:
        row.html = noteview.row_html(row, page)


def _profiles(project_id: int, shown) -> list:
    """The profile menu (webapp.review.catalog's copy: a menu may be seconds old), by name and
    newest version first, with the profile shown even when the copy is older than it."""
    found = dict(catalog.profiles(project_id))
    if shown is not None:
        found.setdefault(shown.pk, shown)
    return sorted(found.values(), key=lambda p: (p.name, -p.version))


def _round_of(request):
    """The review round the page is reviewing in (`round` in the query or form), or None."""
    round_id = _int(request.POST.get("round") or request.GET.get("round"))
    return access.round_for(request.user, round_id) if round_id is not None else None


# ---------------------------------------------------------------- browsing


@capability_required(Capability.VIEW)
def index(request):
    return render(
        request,
        "review/index.html",
        {
            "nav": "review",
            "corpora": Corpus.objects.visible_to(request.user).order_by("name"),
            "mine": request.user.peak_decisions.count(),
        },
    )


def note_list(request, corpus_id):
    corpus = access.corpus_for(request.user, corpus_id)
    sel = selection.for_corpus(corpus, request.GET)
    filters = browse.Filters.from_query(request.GET)
    page = browse.browse(corpus, sel, filters, request.GET.get("after"))
    context = {
        "nav": "review",
        "corpus": corpus,
        "sel": sel,
        "filters": filters,
        "page": page,
        "states": browse.STATES,
        "scan": browse.SCAN,
        "query": _without(request.GET, "after"),
        "profiles": PeakProfile.objects.of_project(corpus.project_id).order_by("name", "-version"),
    }
    template = (
        "review/note_list.html#note-rows"
        if request.htmx and request.htmx.target == "more-notes"
        else "review/note_list.html"
    )
    return render(request, template, context)


def note_view(request, corpus_id, note_id):
    note = access.note_for(request.user, corpus_id, note_id)
    sel = selection.for_note(note, request.GET)
    if request.htmx and request.GET.get("waiting") == "maps" and noteview.still_computing(note, sel):
        return HttpResponse(status=204)  # the panel's poll while its maps are computed: nothing yet
    panel = noteview.build_panel(
        note,
        sel,
        request.user,
        window=request.GET.get("window"),
        peak=request.GET.get("peak"),
        view=request.GET.get("view"),
        sentence=request.GET.get("sentence"),
        by=request.GET.get("by"),
    )
    template = "review/note.html#panel" if request.htmx and request.htmx.target == "note-panel" else "review/note.html"
    return render(request, template, _note_context(request, note, sel, panel))


def review_queue(request, corpus_id):
    corpus = access.corpus_for(request.user, corpus_id, Capability.REVIEW)
    sel = selection.for_corpus(corpus, request.GET)
    result = queue.next_pair(corpus, sel, request.user, _pair(request.GET.get("after")))
    if result.pair is not None:
        note_id, task_id = result.pair
        query = sel.query(task=task_id)
        return redirect(reverse("review:note", args=[corpus.pk, note_id]) + f"?{query}")
    return render(request, "review/queue.html", {"nav": "review", "corpus": corpus, "sel": sel, "result": result})


# ---------------------------------------------------------------- decisions


@require_POST
def decide(request, corpus_id, note_id):
    note = access.note_for(request.user, corpus_id, note_id, Capability.REVIEW)
    form = DecisionForm(request.POST)
    outcome = actions.submit(note, form, request.user)
    return _after_change(request, note, outcome)


@require_POST
def undo(request, corpus_id, note_id):
    note = access.note_for(request.user, corpus_id, note_id, Capability.REVIEW)
    outcome = actions.undo(note, request.user)
    return _after_change(request, note, outcome)


def _after_change(request, note, outcome):
    """htmx: a decision's peak row when the form targets it (the notice and the counter out of
    band), else `after_post` (409 for a stale page, 400 for a refusal: these replace the panel
    whatever the form targets)."""
    window = _int(request.POST.get("window"))  # the window the form was on
    if request.htmx and outcome.decision is not None and request.htmx.target == _row_id(outcome):
        return _decided(request, note, outcome, window)
    return after_post(request, note, outcome)


def after_post(request, note, outcome):
    """The answer to a POST from the note page that changed the note or its decisions (here, or a
    missed identifier: webapp.deid_ops.missed_views), under the selection and window the form carried:
    htmx gets the panel (whatever element the form targeted) with the outcome's message; a plain
    form a redirect back to the note (or the full page with the message when refused)."""
    window = _int(request.POST.get("window"))
    sel = selection.for_note(note, request.POST)
    if not request.htmx and outcome.status == 200:
        messages.add_message(request, outcome.level, outcome.message)
        return redirect(_note_url(note, sel, window=window or None))
    panel = noteview.build_panel(note, sel, request.user, window=window)
    template = "review/note.html#panel" if request.htmx else "review/note.html"
    response = render(request, template, _note_context(request, note, sel, panel, outcome), status=outcome.status)
    if request.htmx:  # the panel, whatever element the form targeted
        response["HX-Retarget"], response["HX-Reswap"] = "#note-panel", "outerHTML"
    return response


def _row_id(outcome) -> str:
    return f"peak-item-{outcome.spans.index((outcome.decision.start, outcome.decision.end))}"


def _decided(request, note, outcome, window):
    sel = outcome.selection
    row, decided = noteview.decided_row(
        note, sel, request.user, outcome.spans, (outcome.decision.start, outcome.decision.end)
    )
    context = {
        **_note_urls(note),
        "note": note,
        "corpus": note.corpus,
        "sel": sel,
        "p": row,
        "decided": decided,
        "window_index": window or 0,
        "notice": outcome,
        "can_review": True,  # the decision was recorded: the reviewer may review
        "guideline": outcome.guideline,  # what the decision read (webapp.review.actions.submit)
        "round": _round_of(request),
    }
    _rows_html(request, context, [row], context["window_index"])
    return render(request, "review/note.html#decided", context)


# ---------------------------------------------------------------- tuning


def preview(request, corpus_id):
    corpus = access.corpus_for(request.user, corpus_id)
    sel = selection.for_corpus(corpus, request.GET)
    sample = tuning.sample_for(corpus, sel)
    result = tuning.preview(sample, sel.params) if sample is not None else None
    template = "review/preview.html" if request.htmx else "review/preview_page.html"
    return render(
        request,
        template,
        {
            "nav": "review",
            "corpus": corpus,
            "sel": sel,
            "preview": result,
            "can_tune": any(has_capability(request.user, c, corpus.project_id) for c in access.TUNE),
        },
    )


@require_POST
def redraw_sample(request, corpus_id):
    corpus = access.tuning_corpus_for(request.user, corpus_id)
    sel = selection.for_corpus(corpus, request.POST)
    tuning.sample_for(corpus, sel, redraw=True)
    return redirect(_safe_next(request, reverse("review:notes", args=[corpus.pk])))


@require_POST
def save_profile(request):
    access.require_any(request.user, access.TUNE)
    form = SaveProfileForm(request.POST)
    back = _safe_next(request, reverse("review:index"))
    if not form.is_valid():
        messages.error(
            request,
            _("The profile was not saved: %(problems)s")
            % {"problems": "; ".join(message for errors in form.errors.values() for message in errors)},
        )
        return redirect(back)
    corpus = access.tuning_corpus_for(request.user, form.cleaned_data["corpus"])  # another project's: 404
    profile = tuning.save_profile(form.cleaned_data["name"], form.params, request.user, project=corpus.project_id)
    messages.success(
        request,
        _("Saved peak profile %(profile)s (kernel %(kernel)s, σ %(sigma)s, lower %(lower)s, upper %(upper)s).")
        % {
            "profile": profile,
            "kernel": profile.kernel_size,
            "sigma": f"{profile.sigma:g}",
            "lower": f"{profile.lower:g}",
            "upper": f"{profile.upper:g}",
        },
    )
    return redirect(_with_profile(back, profile))


# ---------------------------------------------------------------- validation


def validation_list(request, corpus_id):
    corpus = access.corpus_for(request.user, corpus_id)
    sel = selection.for_corpus(corpus, request.POST or request.GET)
    form = ValidationSetForm(
        request.POST or None,
        initial={
            "name": f"{corpus.name}-validation",
            "model": sel.model.pk if sel.model else None,
            "method": sel.method,
            "template": sel.template,
        },
    )
    if request.method == "POST":
        corpus = access.tuning_corpus_for(request.user, corpus_id)
        if form.is_valid():
            data = form.cleaned_data
            try:
                vset = validation.draw(
                    corpus,
                    sel,
                    name=data["name"],
                    size=data["size"],
                    seed=data["seed"],
                    grid=data["grid"],
                    actor=request.user,
                )
            except validation.ValidationSetError as exc:
                form.add_error(None, str(exc))
            else:
                if vset.shortfall:
                    messages.warning(
                        request, _("%(shortfall)s They are held out of dataset builds.") % {"shortfall": vset.shortfall}
                    )
                else:
                    drawn = len(vset.items)
                    said = ngettext(  # "notes" for one too, as before; a translation may agree with the count
                        "Drew %(count)s notes; they are held out of dataset builds.",
                        "Drew %(count)s notes; they are held out of dataset builds.",
                        drawn,
                    )
                    messages.success(request, said % {"count": drawn})
                return redirect("review:validation_round", vset.pk)
    sets = corpus.validation_sets.select_related("model_version", "created_by", "retired_by")
    return render(
        request,
        "review/validation_list.html",
        {"nav": "review", "corpus": corpus, "sel": sel, "form": form, "sets": sets},
    )


def validation_round(request, set_id):
    vset = access.validation_set_for(request.user, set_id)
    if not has_capability(request.user, Capability.REVIEW, vset.corpus.project_id) or vset.is_retired:
        return redirect("review:validation_results", vset.pk)
    nxt = validation.next_item(vset, request.user)
    if nxt is None:
        return redirect("review:validation_results", vset.pk)
    # a long note's window is kept while the questions stay on the same note
    same_note = request.GET.get("note") == str(nxt[1])
    item = validation.item(vset, nxt[0], nxt[3], window=request.GET.get("window") if same_note else None)
    done, total = validation.progress(vset, request.user)
    window_url = f"{reverse('review:validation_round', args=[vset.pk])}?note={item.note.pk}&window="
    context = {
        "nav": "review",
        "vset": vset,
        "item": item,
        "done": done,
        "total": total,
        "settings": len(vset.grid),
        "legend": rendering.legend(),
        "window_url": window_url,
        "guideline": current_guideline(item.task, vset.corpus.project_id),
    }
    return render(request, "review/validation_round.html", context)


@require_POST
def validation_judge(request, set_id):
    vset = access.validation_set_for(request.user, set_id, Capability.REVIEW)
    try:
        validation.judge(vset, request.user, **_validation_answer(request.POST))
    except (KeyError, ValueError, validation.ValidationSetError) as exc:
        messages.error(request, _("Not recorded: %(reason)s") % {"reason": exc})
    return redirect(_round_url(vset, request.POST))


def validation_results(request, set_id):
    vset = access.validation_set_for(request.user, set_id)
    rows, best = validation.tally(vset)
    done, total = validation.progress(vset, request.user)
    adopt_form = AdoptForm(initial={"name": f"validated-{vset.pk}", "setting": best.index if best else 0})
    return render(
        request,
        "review/validation_results.html",
        {
            "nav": "review",
            "vset": vset,
            "rows": rows,
            "best": best,
            "done": done,
            "total": total,
            "adopt_form": adopt_form,
            "can_tune": any(has_capability(request.user, c, vset.corpus.project_id) for c in access.TUNE),
            "can_review": has_capability(request.user, Capability.REVIEW, vset.corpus.project_id),
            "can_retire": access.may_retire(request.user, vset),
            "can_settle": has_capability(request.user, Capability.ADJUDICATE, vset.corpus.project_id),
            "disputes": validation.disputes(vset),
        },
    )


def _validation_answer(form) -> dict:
    """The position, setting and yes/no of a validation answer form (KeyError, ValueError)."""
    return {
        "position": int(form["position"]),
        "setting": int(form["setting"]),
        "reasonable": form.get("answer") == "yes",
    }


def validation_settle(request, set_id):
    """Curators settle the (note, setting)s of a validation set on which its reviewers split."""
    vset = access.validation_set_for(request.user, set_id, Capability.ADJUDICATE)
    url = reverse("review:validation_settle", args=[vset.pk])
    if request.method == "POST":
        try:
            validation.settle(vset, request.user, **_validation_answer(request.POST))
        except (KeyError, ValueError, validation.ValidationSetError) as exc:
            messages.error(request, _("Not recorded: %(reason)s") % {"reason": exc})
            return redirect(f"{url}?d={_int(request.POST.get('index')) or 0}")
        return redirect(url)
    found = validation.disputes(vset)
    index = _int(request.GET.get("d"))
    if index is None or not 0 <= index < len(found):
        index = next((i for i, d in enumerate(found) if d.verdict is None), 0)
    dispute = found[index] if found else None
    item = None
    if dispute is not None:
        window = request.GET.get("window") if request.GET.get("note") == str(dispute.note_id) else None
        item = validation.item(vset, dispute.position, dispute.setting, window=window)
    context = {
        "nav": "review",
        "vset": vset,
        "disputes": found,
        "settled": sum(d.verdict is not None for d in found),
        "unsettled": sum(d.verdict is None for d in found),
        "index": index,
        "dispute": dispute,
        "item": item,
        "legend": rendering.legend(),
        "window_url": f"{url}?d={index}&note={dispute.note_id}&window=" if dispute else "",
        "guideline": current_guideline(item.task, vset.corpus.project_id) if item else None,
    }
    return render(request, "review/validation_settle.html", context)


@require_POST
def validation_retire(request, set_id):
    vset = access.retirable_set_for(request.user, set_id)
    if validation.retire(vset, request.user):
        messages.success(
            request,
            _("%(name)s is retired: its notes are no longer held out of new dataset builds. Its answers are kept.")
            % {"name": vset.name},
        )
    else:
        messages.info(request, _("%(name)s was already retired.") % {"name": vset.name})
    return redirect("review:validation_results", vset.pk)


@require_POST
def validation_adopt(request, set_id):
    vset = access.tuning_set_for(request.user, set_id)
    form = AdoptForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Give the profile a name (letters, digits, - and _)."))
        return redirect("review:validation_results", vset.pk)
    try:
        profile = validation.adopt(vset, form.cleaned_data["setting"], form.cleaned_data["name"], request.user)
    except validation.ValidationSetError as exc:
        messages.error(request, str(exc))
    else:
        setting = form.cleaned_data["setting"] + 1
        messages.success(
            request,
            _("Peak profile %(profile)s created from setting %(setting)s.") % {"profile": profile, "setting": setting},
        )
    return redirect("review:validation_results", vset.pk)


# ---------------------------------------------------------------- comparison and reports


def compare(request, corpus_id, note_id):
    """Two models' maps of a note side by side; with one model only, which one lacks maps and how
    to compute them."""
    note = access.note_for(request.user, corpus_id, note_id)
    sel = selection.for_note(note, request.GET)
    first, second = _pair_of_models(note.corpus.project_id, sel, request.GET)
    result = (
        comparison.compare_note(
            note, sel.task, first, second, sel.method, sel.template, sel.config, window=request.GET.get("window")
        )
        if sel.task
        else None
    )
    query = sel.query(a=first.pk if first else None, b=second.pk if second else None)
    return render(
        request,
        "review/compare.html",
        {
            "nav": "review",
            "note": note,
            "corpus": note.corpus,
            "sel": sel,
            "first": first,
            "second": second,
            "partner": comparison.partner_for(first, note.corpus.project_id) if second is None else None,
            "result": result,
            "window_url": f"{reverse('review:compare', args=[note.corpus_id, note.pk])}?{query}&window=",
            "can_launch": has_capability(request.user, Capability.LAUNCH, note.corpus.project_id),
            "legend": rendering.legend(),
            "diff_legend": rendering.diff_legend(),
        },
    )


def compare_summary(request, corpus_id):
    corpus = access.corpus_for(request.user, corpus_id)
    sel = selection.for_corpus(corpus, request.GET)
    first, second = _pair_of_models(corpus.project_id, sel, request.GET)
    summary = comparison.corpus_summary(corpus, first, second, sel.method, sel.template, sel.config)
    template = "review/compare.html#summary" if request.htmx else "review/compare_summary.html"
    return render(
        request,
        template,
        {
            "nav": "review",
            "corpus": corpus,
            "sel": sel,
            "first": first,
            "second": second,
            "summary": summary,
            "can_launch": has_capability(request.user, Capability.LAUNCH, corpus.project_id),
        },
    )


@capability_required(Capability.VIEW)
def report(request):
    corpus = _chosen(Corpus.objects.visible_to(request.user), request.GET.get("corpus"))
    model = _chosen(ModelVersion.objects.visible_to(request.user), request.GET.get("model"))
    method = request.GET.get("method") or None
    given = _int(request.GET.get("reviewers"))
    reviewers = min(max(given, 1), 20) if given else None  # None: as many as the rounds there have
    state = report_store.current(request.user, corpus, model, method)  # stored figures; queued when stale
    csv_query = request.GET.copy()
    csv_query["format"] = "csv"
    if request.GET.get("format") == "csv":
        if state.figures is None:
            response = HttpResponse(_("The report is being computed; try again in a moment.") + "\n", status=503)
            response["Retry-After"] = "5"
            return response
        record(request.user, AuditEvent.Action.EXPORT, corpus or model, kind="review_report", format="csv")
        lines = report_store.agreement_csv(state.figures)
        response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="review-agreement.csv"'
        return response
    context = {
        "state": state,
        "figures": state.figures,
        "csv_url": f"{reverse('review:report')}?{csv_query.urlencode()}",
        "time": timing.stored_review_time(
            state.figures["time"], request.user, corpus, model, method, reviewers=reviewers
        )
        if state.figures
        else None,
    }
    if request.htmx:  # the figures' poll: it stops once they are fresh
        fragment = render(request, "review/report.html#figures", context)
        return HttpResponseStopPolling(fragment.content) if state.fresh else fragment
    return render(
        request,
        "review/report.html",
        {
            **context,
            "nav": "review",
            "corpus": corpus,
            "model": model,
            "method": method,
            "corpora": Corpus.objects.visible_to(request.user).order_by("name"),
            "models": ModelVersion.objects.visible_to(request.user).order_by("name"),
        },
    )


# ---------------------------------------------------------------- helpers


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _chosen(visible, value):
    """The row a filter names, among those the user may see; none named, None (every one). A
    named row the user may not see (or that does not exist) is a 404, as in a URL."""
    if value in (None, ""):
        return None
    row = visible.filter(pk=_int(value)).first()
    if row is None:
        raise Http404
    return row


def _round_url(vset, form) -> str:
    """The validation round, on the window of the note the answer was given on (the round keeps
    it if the next question is on the same note)."""
    url = reverse("review:validation_round", args=[vset.pk])
    position, window = _int(form.get("position")), _int(form.get("window"))
    if window and position is not None and 0 <= position < len(vset.items):
        url += f"?note={vset.items[position][0]}&window={window}"
    return url


def _pair(value):
    """'note:task' -> (note, task)."""
    try:
        note_id, task_id = str(value).split(":")
        return int(note_id), int(task_id)
    except (TypeError, ValueError):
        return None


def _without(query, *names) -> str:
    copy = query.copy()
    for name in names:
        copy.pop(name, None)
    return copy.urlencode()


def _safe_next(request, default: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        return target
    return default


def _with_profile(url: str, profile) -> str:
    """The URL with profile=<new> and without slider overrides (they are the profile now)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("profile", "k", "sigma", "lower", "upper")]
    query.append(("profile", str(profile.pk)))
    return urlunsplit(parts._replace(query=urlencode(query)))


def _pair_of_models(project_id, sel, query):
    """The two model versions to compare: ?a= and ?b= (base models and the project's own), else the
    selection's model and another model with maps for the note (its child first, e.g. the DSM model
    trained from it)."""
    models = {m.pk: m for m in ModelVersion.objects.of_project(project_id)}
    first = models.get(_int(query.get("a"))) or sel.model
    second = models.get(_int(query.get("b")))
    if second is None:
        others = [m for m in sel.models if first is None or m.pk != first.pk]
        second = next((m for m in others if first and m.parent_id == first.pk), others[0] if others else None)
    if first is None and second is None:
        raise Http404("No model version")
    return first, second
