"""The helper that finds machine numbers a page could not read back (tests/webapp/machine_numbers)."""

from tests.webapp.machine_numbers import machine_numbers, unparsable


def test_a_decimal_comma_in_a_value_coordinate_data_attribute_or_style_is_found():
    page = (
        '<input type="range" name="sigma" min="0.25" max="3" step="0.25" value="1,25">'
        '<svg viewBox="0 0 1000 12,5"><rect x="12.5%" width="37,5%" height="100%"/></svg>'
        '<div data-score="0,85" data-task="heart rate, 1,5 mg" style="width: 4,5%"></div>'
    )
    assert unparsable(page) == [
        ("input", "value", "1,25"),
        ("svg", "viewbox", "0 0 1000 12,5"),
        ("rect", "width", "37,5%"),
        ("div", "data-score", "0,85"),
        ("div", "style", "4,5%"),
    ]


def test_machine_numbers_parse_and_text_is_left_alone():
    page = (
        '<input type="hidden" name="q" value="fever, 38,5 C"><input name="k" value="3">'
        '<rect x="12.5%" width="1" height="100%" rx="2"/><a data-window="-1" data-hash="ab12">1,5</a>'
    )
    assert unparsable(page) == []
    assert ("input", "value", "3") in machine_numbers(page) and ("a", "data-window", "-1") in machine_numbers(page)
