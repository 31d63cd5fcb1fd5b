from django.urls import path

from webapp.accounts import project_views as views

app_name = "projects"

urlpatterns = [
    path("", views.project_list, name="list"),
    path("new/", views.project_new, name="new"),
    path("<slug:slug>/", views.project_detail, name="detail"),
    path("<slug:slug>/members/", views.member_add, name="member_add"),
    path("<slug:slug>/tracking/", views.tracking_switch, name="tracking"),
    path("<slug:slug>/members/<int:membership_id>/remove/", views.member_remove, name="member_remove"),
]
