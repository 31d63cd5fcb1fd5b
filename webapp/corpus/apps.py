from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CorpusConfig(AppConfig):
    name = "webapp.corpus"
    label = "corpus"
    verbose_name = _("Corpora, notes and tasks")
