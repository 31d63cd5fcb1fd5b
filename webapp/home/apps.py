from django.apps import AppConfig


class HomeConfig(AppConfig):
    name = "webapp.home"
    label = "home"
