"""De-identification of clinical notes: find identifiers, replace them, keep offsets.

No Django here: the web app (webapp/deid) and `python -m ml deidentify` call the same code.

The contract every part codes against (kept in ml/deid/types.py):

- `DeidConfig`: the language ("it", "es", "en"), the metadata fields whose values are known
  identifiers (patient name, record number), the project's record-number patterns, its
  allow-list (clinical eponyms and terms never replaced) and deny-list (the ward's own words
  always replaced), an optional local NER model folder.
- `Detector(config).find(text, known={field: value}) -> list[Finding]`: sorted, non-overlapping
  findings with half-open [start, end) character offsets in `text`.
- `Replacer(mode, language, secret).replace(text, findings, patient=key) -> Replacement`:
  the new text, the replaced spans in both texts, and `map_span(start, end)` that carries an
  offset pair (gold evidence, a peak) from the original text into the new one.
"""
