"""Annotation-tool formats: reading gold evidence in (with a mapping of labels to tasks) and
writing a corpus's notes, gold spans, peaks and review decisions out.

formats/   the table of formats, one module each, over one neutral document; no Django
mapping.py a mapping of a file's labels to tasks and label values; no Django
gold.py    import of gold evidence through the validated, atomic annotation import
exporting.py  a corpus's documents (gold, peaks, decisions) for any format
"""
