from django.apps import AppConfig


class PipelineConfig(AppConfig):
    name = "webapp.pipeline"
    label = "pipeline"
