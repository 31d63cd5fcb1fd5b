from django.urls import path

from webapp.deid_ops import gate_views, missed_views, views

app_name = "deid"
urlpatterns = [
    path("policy/<slug:slug>/", views.policy_page, name="policy"),
    path("corpora/<int:corpus_id>/deidentify/", views.corpus_deidentify, name="deidentify"),
    path("jobs/<int:job_id>/", views.job_detail, name="job"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel, name="job_cancel"),
    path("jobs/<int:job_id>/resume/", views.job_resume, name="job_resume"),
    path("missed/", missed_views.missed_identifier, name="missed"),
    path("corpora/<int:corpus_id>/scan/", gate_views.corpus_scan, name="corpus_scan"),
    path("corpora/<int:corpus_id>/mark/", gate_views.corpus_mark, name="corpus_mark"),
]
