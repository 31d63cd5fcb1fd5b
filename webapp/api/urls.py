"""/api/: the token and webhook pages (login session) and the API itself (bearer tokens)."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from webapp.api import views
from webapp.api.api import api

api_patterns, app_name_, namespace = api.urls
for pattern in api_patterns:  # the API authenticates by token, not by the login session
    login_not_required(pattern.callback)

urlpatterns = [
    path("tokens/", views.tokens_page, name="api_tokens"),
    path("projects/<slug:slug>/webhooks/", views.webhooks_page, name="api_webhooks"),
    path("", (api_patterns, app_name_, namespace)),
]
