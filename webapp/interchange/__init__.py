"""Annotation-tool exports: a corpus's notes, gold spans, peaks and review decisions written out in
any format of the format table (webapp.lib.formats), from the corpus page, the API and
`manage.py export_annotations`.

exporting.py  a corpus's documents (gold, peaks, decisions) for any format
views.py      the export page (and the upload page's form for tool files: forms.py)

Reading the tools' files in is the corpus import's (webapp.corpus.gold, through the same format
table and label mapping, webapp.lib.formats); no Django in the table.
"""
