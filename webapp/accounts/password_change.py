"""A one-time password is used once: its person signs in with it and must then choose their own
password before any page answers (webapp.accounts.local_users makes the PasswordChangeRequired
row). At sign-in the session is marked (one query then, none per request); the middleware sends
every request of a marked session to the change page, except the page itself and signing out;
the change removes the row and the mark."""

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.shortcuts import redirect
from django.urls import reverse, reverse_lazy
from django.utils.translation import gettext as _

from webapp.accounts.models import PasswordChangeRequired

SESSION_KEY = "must_change_password"


def mark_session(sender, request, user, **kwargs):
    """user_logged_in: remember in the session that this person must change their password."""
    if PasswordChangeRequired.objects.filter(user=user).exists():
        request.session[SESSION_KEY] = True


class PasswordChangeRequiredMiddleware:
    """After AuthenticationMiddleware: a marked session reaches the change page only."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.session.get(SESSION_KEY) and request.path not in (reverse("password_change"), reverse("logout")):
            return redirect("password_change")  # the API's token calls carry no session: not here
        return self.get_response(request)


class PasswordChangeView(auth_views.PasswordChangeView):
    template_name = "registration/password_change_form.html"
    success_url = reverse_lazy("home")

    def form_valid(self, form):
        response = super().form_valid(form)  # keeps this session signed in
        PasswordChangeRequired.objects.filter(user=self.request.user).delete()
        self.request.session.pop(SESSION_KEY, None)
        messages.success(self.request, _("Your password is set."))
        return response
