"""Relevance job pages (filled in by the pipeline jobs work)."""
from django.urls import path

from webapp.pipeline import views

app_name = "pipeline"
urlpatterns = [
    path("", views.job_list, name="job_list"),
]
