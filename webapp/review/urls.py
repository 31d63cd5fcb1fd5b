from django.urls import path

from webapp.review import round_views, span_views, views

app_name = "review"
urlpatterns = [
    path("", views.index, name="index"),
    path("reports/", views.report, name="report"),
    path("profiles/save/", views.save_profile, name="save_profile"),
    path("<int:corpus_id>/", views.note_list, name="notes"),
    path("<int:corpus_id>/queue/", views.review_queue, name="queue"),
    path("<int:corpus_id>/preview/", views.preview, name="preview"),
    path("<int:corpus_id>/preview/redraw/", views.redraw_sample, name="redraw_sample"),
    path("<int:corpus_id>/compare/summary/", views.compare_summary, name="compare_summary"),
    path("<int:corpus_id>/validation/", views.validation_list, name="validation_list"),
    path("<int:corpus_id>/notes/<int:note_id>/", views.note_view, name="note"),
    path("<int:corpus_id>/notes/<int:note_id>/decide/", views.decide, name="decide"),
    path("<int:corpus_id>/notes/<int:note_id>/undo/", views.undo, name="undo"),
    path("<int:corpus_id>/notes/<int:note_id>/compare/", views.compare, name="compare"),
    path("<int:corpus_id>/notes/<int:note_id>/spans/add/", span_views.add_span, name="add_span"),
    path("<int:corpus_id>/notes/<int:note_id>/spans/<int:span_id>/edit/", span_views.edit_span, name="edit_span"),
    path("<int:corpus_id>/notes/<int:note_id>/spans/<int:span_id>/remove/", span_views.remove_span, name="remove_span"),
    path("<int:corpus_id>/notes/<int:note_id>/accept-rest/", span_views.accept_rest, name="accept_rest"),
    path("validation/<int:set_id>/", views.validation_round, name="validation_round"),
    path("validation/<int:set_id>/judge/", views.validation_judge, name="validation_judge"),
    path("validation/<int:set_id>/results/", views.validation_results, name="validation_results"),
    path("validation/<int:set_id>/settle/", views.validation_settle, name="validation_settle"),
    path("validation/<int:set_id>/adopt/", views.validation_adopt, name="validation_adopt"),
    path("validation/<int:set_id>/retire/", views.validation_retire, name="validation_retire"),
    path("<int:corpus_id>/rounds/", round_views.round_list, name="rounds"),
    path("rounds/<int:round_id>/", round_views.round_detail, name="round"),
    path("rounds/<int:round_id>/queue/", round_views.round_queue, name="round_queue"),
    path("rounds/<int:round_id>/reviewers/", round_views.round_reviewer, name="round_reviewer"),
    path("rounds/<int:round_id>/order/", round_views.round_order, name="round_order"),
    path("rounds/<int:round_id>/adjudicate/", round_views.adjudicate, name="adjudicate"),
    path("rounds/<int:round_id>/adjudicate/spans/", span_views.adjudicate_spans, name="adjudicate_spans"),
    path("rounds/<int:round_id>/export.<str:fmt>", round_views.round_export, name="round_export"),
]
