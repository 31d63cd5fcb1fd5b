from django.urls import path

from webapp.evaluation import views

app_name = "evaluation"
urlpatterns = [
    path("", views.evaluation_list, name="list"),
    path("new/", views.evaluation_new, name="new"),
    path("<int:evaluation_id>/", views.evaluation_detail, name="detail"),
    path("<int:evaluation_id>/cancel/", views.evaluation_cancel, name="cancel"),
    path("<int:evaluation_id>/resume/", views.evaluation_resume, name="resume"),
]
