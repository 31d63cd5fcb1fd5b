from django.urls import path

from webapp.erasure import views

app_name = "erasure"
urlpatterns = [
    path("", views.erasure_list, name="list"),
    path("new/", views.erasure_new, name="new"),
    path("<int:erasure_id>/", views.erasure_detail, name="detail"),
    path("<int:erasure_id>/cancel/", views.erasure_cancel, name="cancel"),
    path("<int:erasure_id>/resume/", views.erasure_resume, name="resume"),
    path("retention/<slug:slug>/", views.retention_page, name="retention"),
]
