"""Just the admin, so the admin tests do not depend on the other apps' pages."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("admin/", admin.site.urls),
]
