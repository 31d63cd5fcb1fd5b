"""Erasure (GDPR art. 17, end-of-study retention): a note, every note of a patient, a corpus or
a project removed with every row made from them, as one unit of long work.

* `planning`: what a target reaches, table by table, in the order rows are deleted (children
  first), and the counts of the dry run;
* `erasing`: the request (launch, cancel, resume) and the work itself: bounded batches, each one
  transaction that deletes rows and adds them to the request's counts, so a second worker
  finishes what a killed one started, nothing counted twice; then the receipt in the audit log;
* `models`: the request (a WorkUnit) and the two marks an erasure leaves: a dataset version
  withdrawn, a trained model "trained on erased data" (no pretence of unlearning).
"""
