from django.apps import AppConfig


class ErasureConfig(AppConfig):
    name = "webapp.erasure"
    label = "erasure"
