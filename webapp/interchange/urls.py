from django.urls import path

from webapp.interchange import views

app_name = "interchange"
urlpatterns = [
    path("corpora/<int:corpus_id>/export/", views.export, name="export"),
    path("imports/<int:job_id>/import-now/", views.import_previewed, name="import_previewed"),
]
