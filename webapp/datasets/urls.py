from django.urls import path

from webapp.datasets import views

app_name = "datasets"
urlpatterns = [
    path("", views.dataset_list, name="list"),
    path("new/", views.dataset_new, name="new"),
    path("<int:dataset_id>/", views.dataset_detail, name="detail"),
    path("<int:dataset_id>/build-again/", views.dataset_build_again, name="build_again"),
    path("<int:dataset_id>/cancel/", views.dataset_cancel, name="cancel"),
    path("<int:dataset_id>/download/<str:fmt>/", views.dataset_download, name="download"),
    path("<int:dataset_id>/exports/", views.dataset_export, name="export"),
    path("<int:dataset_id>/exports/<int:export_id>/download/", views.export_download, name="export_download"),
    path("<int:dataset_id>/exports/<int:export_id>/cancel/", views.export_cancel, name="export_cancel"),
]
