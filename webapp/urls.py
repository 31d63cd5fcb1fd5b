from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog

from webapp.accounts import language, oidc, password_change
from webapp.accounts.views import LoginView


@login_not_required
def favicon(request):
    """Browsers and tools ask for /favicon.ico whatever base.html links; whitenoise serves the file."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("login/", LoginView.as_view(), name="login"),
    path("language/", language.choose_language, name="set_language"),
    # the strings of static/**/*.js in the request's language (gettext(), ngettext(), interpolate())
    path("jsi18n/", login_not_required(JavaScriptCatalog.as_view(domain="djangojs")), name="javascript_catalog"),
    path("logout/", login_not_required(oidc.LogoutView.as_view()), name="logout"),
    path("oidc/authenticate/", login_not_required(oidc.AuthenticateView.as_view()), name="oidc_authentication_init"),
    path("oidc/callback/", login_not_required(oidc.CallbackView.as_view()), name="oidc_authentication_callback"),
    path("reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(), name="password_reset_confirm"),
    path("reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("password/", password_change.PasswordChangeView.as_view(), name="password_change"),
    path("users/", include("webapp.accounts.urls")),
    path("admin/", admin.site.urls),
    path("audit/", include("webapp.audit.urls")),
    path("projects/", include("webapp.accounts.project_urls")),
    path("corpora/", include("webapp.corpus.urls")),
    path("jobs/", include("webapp.pipeline.urls")),
    path("datasets/", include("webapp.datasets.urls")),
    path("review/", include("webapp.review.urls")),
    path("training/", include("webapp.training.urls")),
    path("evaluations/", include("webapp.evaluation.urls")),
    path("interchange/", include("webapp.interchange.urls")),
    path("api/", include("webapp.api.urls")),
    path("erasure/", include("webapp.erasure.urls")),
    path("deid/", include("webapp.deid_ops.urls")),
    path("", include("webapp.home.urls")),
]

handler403 = "webapp.audit.views.permission_denied"  # every refusal is audited
