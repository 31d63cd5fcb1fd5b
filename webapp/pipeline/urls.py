from django.urls import path

from webapp.pipeline import map_views, views

app_name = "pipeline"
urlpatterns = [
    path("", views.job_list, name="job_list"),
    path("new/", views.job_launch, name="job_launch"),
    path("<int:job_id>/", views.job_detail, name="job_detail"),
    path("<int:job_id>/cancel/", views.job_cancel, name="job_cancel"),
    path("<int:job_id>/resume/", views.job_resume, name="job_resume"),
    path("maps/import/", map_views.map_import_new, name="map_import_new"),
    path("maps/imports/", map_views.map_import_list, name="map_import_list"),
    path("maps/imports/<int:map_import_id>/", map_views.map_import_detail, name="map_import_detail"),
    path("maps/imports/<int:map_import_id>/cancel/", map_views.map_import_cancel, name="map_import_cancel"),
    path("maps/imports/<int:map_import_id>/resume/", map_views.map_import_resume, name="map_import_resume"),
]
