"""Masked dataset pages (filled in by the dataset work)."""
from django.urls import path

from webapp.datasets import views

app_name = "datasets"
urlpatterns = [
    path("", views.dataset_list, name="list"),
]
