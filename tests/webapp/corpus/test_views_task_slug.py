"""A task made on the Tasks page without a slug gets one from its description, its accented
letters transliterated (issue 38, item 7: "diagnóstico" was "diagn-stico")."""

import pytest
from django.urls import reverse

from webapp.corpus.models import Task

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("description", "slug"),
    [
        ("diagnóstico", "diagnostico"),
        ("Ünïcødé finding", "unicode-finding"),
        ("frequenza cardiaca", "frequenza-cardiaca"),
    ],
)
def test_the_derived_slug_keeps_the_letters_of_the_description(client_for, researcher, description, slug):
    data = {"description": description, "slug": "", "options": "sì\nno", "group": "", "guideline": ""}
    response = client_for(researcher).post(reverse("corpus:task_new"), data)
    assert response.status_code == 302, response.context["form"].errors
    assert Task.objects.get(description=description).slug == slug
