"""The one CSV writer: formula-like text is marked as text, figures stay numbers, nothing is lost."""

import csv
import io

import pytest

from webapp.lib.csv_export import csv_chunks, csv_text, figure, safe_cell


@pytest.mark.parametrize("text", ["=1+1", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_text_a_spreadsheet_would_run_gets_an_apostrophe(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("value,cell", [(None, ""), (-3, -3), (-1.5, -1.5), ("n-1", "n-1"), ("café", "café")])
def test_other_values_are_written_as_they_are(value, cell):
    assert safe_cell(value) == cell


def test_a_figure_we_formatted_stays_a_number():
    assert csv_text(["delta"], [[figure(-1.25, ".1f")], ["-1.2"]]).splitlines() == ["delta", "-1.2", "'-1.2"]


def test_chunks_hold_every_row_in_order():
    rows = [[f"n{i}", "=x", i] for i in range(500)]
    chunks = list(csv_chunks(["id", "label", "n"], rows, size=100))
    assert len(chunks) > 1
    read = list(csv.reader(io.StringIO("".join(chunks), newline="")))
    assert read[0] == ["id", "label", "n"] and read[1:] == [[f"n{i}", "'=x", str(i)] for i in range(500)]
