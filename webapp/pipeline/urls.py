from django.urls import path

from webapp.pipeline import views

app_name = "pipeline"
urlpatterns = [
    path("", views.job_list, name="job_list"),
    path("new/", views.job_launch, name="job_launch"),
    path("<int:job_id>/", views.job_detail, name="job_detail"),
    path("<int:job_id>/cancel/", views.job_cancel, name="job_cancel"),
    path("<int:job_id>/resume/", views.job_resume, name="job_resume"),
]
