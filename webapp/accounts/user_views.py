"""The Users page, for site admins: every account with its projects; local accounts made here
(webapp.accounts.local_users, audited), disabled and enabled again."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from webapp.accounts import local_users
from webapp.accounts.forms import LocalUserForm
from webapp.audit.client_ip import client_address
from webapp.projects.models import Membership
from webapp.projects.roles import is_site_admin


def _require_site_admin(user) -> None:
    if not is_site_admin(user):
        raise PermissionDenied("Only site admins manage accounts.")


def _users():
    memberships = Membership.objects.select_related("project").order_by("project__name", "role")
    return (
        get_user_model()
        .objects.select_related("oidc_identity")
        .order_by("username")
        .prefetch_related(Prefetch("memberships", queryset=memberships, to_attr="project_roles"))
    )


def _list(request, form, status=200, made=None):
    context = {"nav": "users", "users": _users(), "form": form, "made": made}
    return render(request, "accounts/user_list.html", context, status=status)


def user_list(request):
    _require_site_admin(request.user)
    return _list(request, LocalUserForm())


@never_cache
@require_POST
def user_new(request):
    """Answered with the page itself (no redirect), which shows the password or link this once."""
    _require_site_admin(request.user)
    form = LocalUserForm(request.POST)
    if not form.is_valid():
        return _list(request, form, status=400)
    made = local_users.create_local_user(**form.cleaned_data, actor=request.user, ip=client_address(request))
    link = request.build_absolute_uri(made.link_path) if made.link_path else ""
    return _list(request, LocalUserForm(), made={"user": made.user, "password": made.password, "link": link})


@require_POST
def user_active(request):
    """Disable (`active`=0) or enable (`active`=1) the account `user` (its id)."""
    _require_site_admin(request.user)
    user_id = request.POST.get("user", "")
    user = get_object_or_404(get_user_model(), pk=int(user_id) if user_id.isdigit() else 0)
    active = request.POST.get("active") == "1"
    try:
        local_users.set_active(user, active, actor=request.user, ip=client_address(request))
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        said = _("%(user)s is enabled.") if active else _("%(user)s is disabled.")
        messages.success(request, said % {"user": user.get_username()})
    return redirect("accounts:users")
