from django.urls import path

from webapp.training import views

app_name = "training"
urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("new/", views.run_new, name="run_new"),
    path("compare/", views.compare, name="compare"),
    path("diff/", views.diff, name="diff"),
    path("<int:run_id>/", views.run_detail, name="run_detail"),
    path("<int:run_id>/metrics.json", views.run_metrics, name="run_metrics"),
    path("<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("<int:run_id>/resume/", views.run_resume, name="run_resume"),
    path("<int:run_id>/predictions.<str:fmt>", views.run_predictions, name="run_predictions"),
]
