from django.urls import path

from webapp.corpus import views

app_name = "corpus"
urlpatterns = [
    path("", views.corpus_list, name="list"),
    path("<int:corpus_id>/", views.corpus_detail, name="detail"),
    path("<int:corpus_id>/notes/<int:note_id>/", views.note_detail, name="note"),
    path("tasks/", views.task_list, name="tasks"),
    path("tasks/new/", views.task_new, name="task_new"),
    path("tasks/<int:task_id>/", views.task_edit, name="task_edit"),
    path("tasks/<int:task_id>/retire/", views.task_retire, name="task_retire"),
    path("import/", views.upload, name="upload"),
    path("imports/", views.import_list, name="import_list"),
    path("imports/<int:job_id>/", views.import_detail, name="import_detail"),
    path("imports/<int:job_id>/problems.txt", views.import_problems, name="import_problems"),
    path("imports/<int:job_id>/cancel/", views.import_cancel, name="import_cancel"),
    path("imports/<int:job_id>/resume/", views.import_resume, name="import_resume"),
]
