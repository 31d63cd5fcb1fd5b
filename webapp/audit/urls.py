from django.urls import path

from webapp.audit import views

app_name = "audit"
urlpatterns = [
    path("", views.event_list, name="list"),
    path("export.csv", views.event_export, name="export"),
]
