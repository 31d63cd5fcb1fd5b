"""The profile-name fields in Chromium: their `pattern` compiles (Chromium compiles it with the
`v` flag, which refuses an unescaped "-" in a class), so the page logs no error and the browser
checks the name before it is sent."""

import pytest

from tests.browser.test_review import ward  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_profile_name_pattern_compiles_and_checks_the_name(page, login, researcher, ward):  # noqa: F811
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.set_default_timeout(30_000)  # the first page of a test server imports every view
    login(researcher).goto(ward["url"] + "&upper=0.85")  # a changed setting offers to save it
    name = page.locator("#id_profile_name")
    name.wait_for(state="attached")
    checks = name.evaluate(
        "input => ['reviewed-2_b', 'two words', 'naïve'].map(v => { input.value = v;"
        " return input.validity.patternMismatch; })"
    )
    assert checks == [False, True, True]
    assert not [e for e in errors if "pattern" in e.lower()], errors
