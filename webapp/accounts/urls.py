from django.urls import path

from webapp.accounts import user_views

app_name = "accounts"

urlpatterns = [
    path("", user_views.user_list, name="users"),
    path("new/", user_views.user_new, name="user_new"),
    path("active/", user_views.user_active, name="user_active"),
]
