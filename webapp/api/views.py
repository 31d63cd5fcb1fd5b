"""The token page (each user's own tokens) and a project's webhooks page (its admins)."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.cache import never_cache

from webapp.api import tokens
from webapp.api.forms import TokenForm, WebhookForm
from webapp.api.models import ApiToken
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.integrations import webhooks
from webapp.integrations.models import Webhook, WebhookDelivery
from webapp.projects.models import Project
from webapp.projects.roles import Capability, require

LOG_ROWS = 50


@never_cache  # it shows a secret once: no browser or proxy may keep a copy of the page
def tokens_page(request):
    """GET: the user's tokens and the form; POST: make a token, or revoke one (`revoke`=id)."""
    choices = tokens.projects_for(request.user)
    form = TokenForm(projects=choices)
    secret = None
    if request.method == "POST" and request.POST.get("revoke"):
        token = get_object_or_404(ApiToken, pk=_int(request.POST["revoke"]), owner=request.user)
        if tokens.revoke(token, request.user):
            messages.success(request, _("Token %(name)s revoked.") % {"name": token.name})
        return redirect("api_tokens")
    if request.method == "POST":
        form = TokenForm(request.POST, projects=choices)
        if form.is_valid():
            data = form.cleaned_data
            _made, secret = tokens.create(
                request.user, name=data["name"], projects=data["projects"], ceiling=data["ceiling"], days=data["days"]
            )
            form = TokenForm(projects=choices)
    mine = ApiToken.objects.filter(owner=request.user).prefetch_related("projects")
    status = 400 if form.errors else 200
    return render(request, "api/tokens.html", {"form": form, "tokens": mine, "secret": secret}, status=status)


def webhooks_page(request, slug):
    """A project's webhooks and their delivery log; POST adds one, `delete`=id removes one,
    `test`=id sends a test event, `switch`=id with `active`=0/1 switches one off or on."""
    project = get_object_or_404(Project.objects.where(request.user), slug=slug)
    require(request.user, Capability.MANAGE_MEMBERS, project)  # the project's admins
    form = WebhookForm()
    if request.method == "POST":
        action = next((name for name in ("delete", "test", "switch") if request.POST.get(name)), None)
        if action:
            webhook = get_object_or_404(Webhook, pk=_int(request.POST[action]), project=project)
            _act_on(request, project, webhook, action)
            return redirect("api_webhooks", project.slug)
        form = WebhookForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            webhook = Webhook.objects.create(
                project=project, url=data["url"], secret=data["secret"], events=data["events"], created_by=request.user
            )
            record(request.user, AuditEvent.Action.ADD_WEBHOOK, project, webhook=webhook.pk, events=data["events"])
            messages.success(request, _("Webhook added."))
            return redirect("api_webhooks", project.slug)
    context = {
        "project": project,
        "form": form,
        "webhooks": Webhook.objects.filter(project=project),
        "deliveries": WebhookDelivery.objects.filter(webhook__project=project)
        .select_related("webhook")
        .order_by("-created", "-id")[:LOG_ROWS],
    }
    return render(request, "api/webhooks.html", context, status=400 if form.errors else 200)


def _act_on(request, project, webhook: Webhook, action: str) -> None:
    pk = webhook.pk
    if action == "delete":
        webhook.delete()
        record(request.user, AuditEvent.Action.DELETE_WEBHOOK, project, webhook=pk)
        messages.success(request, _("Webhook removed."))
    elif action == "test" and not webhook.active:
        messages.error(request, _("This webhook is switched off: switch it on to send a test."))
    elif action == "test":
        webhooks.send_test(webhook)
        messages.success(request, _("Test event queued: its delivery shows below."))
    else:
        active = request.POST.get("active") == "1"
        stopped = webhooks.switch(webhook, active)
        record(request.user, AuditEvent.Action.SWITCH_WEBHOOK, project, webhook=pk, active=active, stopped=stopped)
        if active:
            messages.success(request, _("Webhook switched on."))
        else:
            said = ngettext(
                "Webhook switched off; %(stopped)d pending delivery stopped.",
                "Webhook switched off; %(stopped)d pending deliveries stopped.",
                stopped,
            )
            messages.success(request, said % {"stopped": stopped})


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
