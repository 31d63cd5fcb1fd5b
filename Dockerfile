# One image for web, workers and flower; they differ only in `command` (see docker-compose.yml).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 \
    DATA_DIR=/data \
    MODEL_DIR=/models \
    STATIC_ROOT=/app/staticfiles

RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq5 tini gettext \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 1000 dsm

WORKDIR /app
COPY requirements.txt requirements-nodeps.txt ./
# torch from the registry is CUDA-enabled and also runs on CPU; never install torchvision beside it.
RUN pip install -r requirements.txt && pip install --no-deps -r requirements-nodeps.txt

COPY . .
# The translations' .mo files are built here (gettext's msgfmt), never copied from a checkout.
RUN DEBUG=0 SECRET_KEY=build-only python manage.py collectstatic --noinput \
    && DEBUG=0 SECRET_KEY=build-only python manage.py compilemessages --verbosity 0 --ignore staticfiles \
    && mkdir -p /data /models && chown -R dsm:dsm /data /models /app/staticfiles

USER dsm
EXPOSE 8000
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["gunicorn", "webapp.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120"]
