from django.conf import settings
from django.contrib.auth import views as auth_views

from webapp.accounts import oidc


class LoginView(auth_views.LoginView):
    """The local login form, and "Sign in with <provider>" beside it when OIDC is on."""

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "oidc_provider": oidc.enabled() and settings.OIDC_PROVIDER_NAME}
