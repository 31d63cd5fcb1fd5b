"""gunicorn's settings beside the command line's (read from the working folder): its own error
and access log handlers get the filter that keeps note text out of logs (webapp.logs), as
Django's handlers do. The access log keeps no query strings: a note search (`?q=`) could hold
a patient's name."""

accesslog = "-"
access_log_format = '%(h)s "%(m)s %(U)s" %(s)s %(b)s %(M)sms'  # %(U)s: the path without its query string


def post_worker_init(worker):
    from webapp.logs import filter_every_handler
    from webapp.wsgi import settle_worker

    filter_every_handler()
    settle_worker()  # the start's objects out of the collector's way (webapp.wsgi)
