from django.apps import AppConfig


class InterchangeConfig(AppConfig):
    name = "webapp.interchange"
    label = "interchange"
    verbose_name = "Annotation-tool exports"
