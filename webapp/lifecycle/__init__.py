"""One lifecycle for every kind of long work: relevance jobs and their chunks, dataset builds,
exports, training runs, evaluations and imports.

A unit of work is a row (a subclass of `WorkUnit`) that one worker at a time holds:

    queued --claim()--> running --finish()/fail()--> done | failed
    queued --cancel--> cancelled                     (its message finds nothing to do)
    running --cancel--> cancelling --the worker stops at a safe point--> cancelled
    running, no heartbeat for WORK_STALL_SECONDS --recovery.sweep()--> queued (sent again)
    cancelled | failed --resume--> queued

* `units` holds the transitions, all atomic conditional UPDATEs, so two workers (or a worker
  and a person pressing Cancel) never both win one; a worker writes only while `attempts` is
  still its own, so a worker presumed dead that wakes up cannot overwrite the unit.
* `heartbeat.Heartbeat` beats from a thread of the worker every WORK_HEARTBEAT_SECONDS, on its
  own database connection (so progress is visible even from inside a long transaction), and
  tells the work when a cancel was asked for.
* `recovery.sweep()` runs in every worker process (a thread started when the worker is ready):
  a unit whose worker stopped beating is queued and sent again, and a queued unit whose message
  was lost (its queue is empty, e.g. after a broker restart without persistence) is sent again.
  The broker's visibility timeout stays a backstop only.
* `queue` sends tasks by name after the commit: the web app never imports `workers/`.
* `progress` turns counts and seconds into a rate and an ETA, never for a stalled unit.
"""
