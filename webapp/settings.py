"""Settings for DecSelfMask Studio, read from the environment.

With nothing set, an embedded default serves: a SQLite file and a filesystem Celery broker
under DATA_DIR, so one laptop runs the web app and a real worker with no servers.
Set DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL or REDIS_URL (Redis) for real deployments.
"""

import json
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF

from webapp.accounts.oidc_config import GroupRolesError, origin, parse_group_roles
from webapp.env import ConfigError, env_auto_bool, env_bool, env_float, env_int, env_list, env_path, env_str
from webapp.lib import outbound
from webapp.lifecycle import kinds as lifecycle_kinds

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
DATA_DIR = env_path("DATA_DIR", BASE_DIR / "var" / "data")
MODEL_DIR = env_path("MODEL_DIR", BASE_DIR / "var" / "models")

_INSECURE_DEV_KEY = "insecure-dev-key-only-for-the-embedded-default-never-for-production"
SECRET_KEY = env_str("SECRET_KEY") or (_INSECURE_DEV_KEY if DEBUG or env_bool("DSM_EMBEDDED", True) else "")
if not SECRET_KEY:
    raise ConfigError("SECRET_KEY must be set when DEBUG is off and the embedded default is disabled")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "csp",
    "axes",
    "ninja",  # the API's docs page from its vendored Swagger UI (webapp.api)
    "webapp.accounts",
    "webapp.projects",
    "webapp.audit",
    "webapp.integrations",
    "webapp.corpus",
    "webapp.interchange",
    "webapp.pipeline",
    "webapp.datasets",
    "webapp.training",
    "webapp.evaluation",
    "webapp.review",
    "webapp.home",
    "webapp.api",
    "webapp.erasure",
    "webapp.deid",
    "webapp.deid_ops",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "webapp.accounts.language.UserLanguageMiddleware",  # profile, IdP claim, browser: the language
    "webapp.accounts.password_change.PasswordChangeRequiredMiddleware",  # a one-time password, once
    "webapp.audit.request_context.RequestAddressMiddleware",  # the client address for audit rows
    "webapp.accounts.oidc.SessionRefresh",  # re-checks IdP sign-ins (off while OIDC is off)
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a lockout into the lockout page
]

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webapp.accounts.context_processors.roles",
            ],
        },
    },
]

# Database: PostgreSQL through DATABASE_URL; otherwise the embedded SQLite file.
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "db.sqlite3",
            "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Failed logins (django-axes): counted per username AND client address together, so a ward
# behind one NAT address is not locked out by one person's typos; at LOGIN_FAILURE_LIMIT the pair
# is refused for LOGIN_LOCKOUT_MINUTES (each further try starts the wait again); an admin unlocks
# at once with `manage.py axes_reset_username NAME`. Logins, failures and lockouts are audited.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "webapp.accounts.backends.AccountBackend"]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False  # no banner on every command; who tried from where goes to the audit log
AXES_DISABLE_ACCESS_LOG = True  # successful logins are in the audit log; not a second table of them
# Behind reverse proxies, how many append to X-Forwarded-For (0: use the connection's address);
# the lockout and the audit log then see the client's address, not the proxy's.
TRUSTED_PROXIES = env_int("TRUSTED_PROXIES", 0)
AXES_CLIENT_IP_CALLABLE = "webapp.audit.client_ip.client_address"
# A name no account has (a password typed as the username?) is kept as a keyed digest.
AXES_USERNAME_CALLABLE = "webapp.accounts.lockout.lockout_username"

# Sign-in through the hospital's identity provider (OpenID Connect, authorization code with PKCE;
# mozilla-django-oidc; webapp/accounts/oidc.py), on when OIDC_RP_CLIENT_ID is set. The endpoints
# are the provider's discovery document's (docs/operations.md, the identity provider).
# OIDC_GROUP_ROLES maps IdP groups to roles, re-evaluated at every sign-in. Every
# OIDC_RENEW_SECONDS the next GET re-checks the account at the provider (prompt=none): a disabled
# IdP account loses its session there.
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET")
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "the hospital account")
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT")
OIDC_OP_LOGOUT_ENDPOINT = env_str("OIDC_OP_LOGOUT_ENDPOINT")  # end_session_endpoint; empty: ends our session only
OIDC_RP_SIGN_ALGO = env_str("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email profile groups")
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
try:
    OIDC_GROUP_ROLES = parse_group_roles(env_str("OIDC_GROUP_ROLES", "{}"))
except GroupRolesError as exc:
    raise ConfigError(str(exc)) from None
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env_int("OIDC_RENEW_SECONDS", 300)
OIDC_USE_PKCE = True
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of the provider's logout
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", 10)
OIDC_CALLBACK_CLASS = "webapp.accounts.oidc.CallbackView"
OIDC_AUTHENTICATE_CLASS = "webapp.accounts.oidc.AuthenticateView"
OIDC_OP_LOGOUT_URL_METHOD = "webapp.accounts.oidc.provider_logout_url"
if OIDC_RP_CLIENT_ID:
    _endpoints = {
        "OIDC_OP_AUTHORIZATION_ENDPOINT": OIDC_OP_AUTHORIZATION_ENDPOINT,
        "OIDC_OP_TOKEN_ENDPOINT": OIDC_OP_TOKEN_ENDPOINT,
        "OIDC_OP_USER_ENDPOINT": OIDC_OP_USER_ENDPOINT,
        # an HS256 token is checked with the client secret; RS256 and ES256 with the provider's keys
        "OIDC_OP_JWKS_ENDPOINT": OIDC_OP_JWKS_ENDPOINT or OIDC_RP_SIGN_ALGO.startswith("HS"),
    }
    _missing = [name for name, value in _endpoints.items() if not value]
    if _missing:
        raise ConfigError(f"OIDC_RP_CLIENT_ID is set, so {', '.join(_missing)} must be too")
    AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "webapp.accounts.oidc.OIDCBackend"]
AXES_WHITELIST_CALLABLE = "webapp.accounts.oidc.is_provider_sign_in"  # the provider guards its own form

# The interface's languages (docs/i18n.md): a user's choice on their profile, else the identity
# provider's locale claim, else the browser's Accept-Language, else LANGUAGE_CODE
# (webapp.accounts.language). Each name in its own language: the menu is read by someone who
# may not read the current one. Dates, times and numbers follow the language (Django's formats).
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("it", "Italiano"), ("es", "Español")]
LOCALE_PATHS = [BASE_DIR / "locale"]  # compiled by `make messages` (no .mo in git)
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600  # the login page's choice, for the next sign-in on this browser
LANGUAGE_COOKIE_HTTPONLY = True
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env_path("STATIC_ROOT", BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG
# Uploads of corpora can be large: stream them to disk instead of memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Import limits (webapp.lib.import_limits), each named in the message that refuses an input over it.
IMPORT_MAX_NOTE_CHARS = env_int("IMPORT_MAX_NOTE_CHARS", 200_000)  # a long discharge letter is ~50,000
IMPORT_MAX_UPLOAD_BYTES = env_int("IMPORT_MAX_UPLOAD_BYTES", 2 * 1024**3)  # as given: upload, file or brat folder
IMPORT_MAX_UNPACKED_BYTES = env_int("IMPORT_MAX_UNPACKED_BYTES", 8 * 1024**3)  # after gzip/bz2/xz/zip
IMPORT_MAX_LINES = env_int("IMPORT_MAX_LINES", 10_000_000)  # lines of one file
IMPORT_MAX_EVIDENCE_SPANS = env_int("IMPORT_MAX_EVIDENCE_SPANS", 100)  # per annotation (or brat entity)
IMPORT_MAX_METADATA_BYTES = env_int("IMPORT_MAX_METADATA_BYTES", 256 * 1024)  # per note, as compact UTF-8 JSON
# One file inside an input (a zip member, what a gzip/bz2/xz file unpacks to, a brat or XMI file)
# or read whole (Label Studio JSON): refused before it is read, so a 1 MB zip declaring a 1 GiB
# member never reaches a reader. Formats parsed whole get a share (XMI a 24th: cassis holds ~23
# times a file's size), so one file's reading stays near this; E3C's largest XMI file is 108 KB.
IMPORT_MAX_FILE_BYTES = env_int("IMPORT_MAX_FILE_BYTES", 512 * 1024**2)

# Task form limits (webapp.corpus.task_forms): a task's label options, and its evidence guideline
# in characters (the Tasks and review pages show it; the catalog's longest is under 2,000).
TASK_MAX_OPTIONS = env_int("TASK_MAX_OPTIONS", 200)
TASK_MAX_GUIDELINE_CHARS = env_int("TASK_MAX_GUIDELINE_CHARS", 20_000)

# Security: on unless DEBUG. `python manage.py check --deploy` is clean with DEBUG off.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 8 * 3600)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp; Django 5.2 has none of its own): only our own, vendored
# scripts and styles, no inline script, style attribute or eval. Charts are SVG drawn by the
# server or uPlot's canvas; htmx is told not to inject its <style> nor eval (templates/base.html).
# tests/webapp/test_content_security_policy.py scans the templates for what this would refuse.
_FORM_ACTION = [SELF]  # and the provider's logout, where the logout form's redirect goes
if OIDC_RP_CLIENT_ID and OIDC_OP_LOGOUT_ENDPOINT:
    _FORM_ACTION.append(origin(OIDC_OP_LOGOUT_ENDPOINT))
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "connect-src": [SELF],  # htmx requests and the training charts' metrics
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": _FORM_ACTION,
        "frame-ancestors": [NONE],
    },
}

# Celery: Redis when a URL is set; otherwise kombu's filesystem transport under DATA_DIR,
# so a real worker process still runs the tasks with no server.
REDIS_URL = env_str("REDIS_URL")
# Django's cache: Redis when a URL is set (CACHE_URL, else REDIS_URL), shared by every web worker;
# otherwise each process's memory. It keeps the review panel's decision-free part
# (webapp.review.caching) and, in front of the database, the sessions (cached_db: a session is
# read from the cache and written to both). webapp.db.redis_cache: Django's Redis cache keeping
# one client per connection pool.
CACHE_URL = env_str("CACHE_URL") or REDIS_URL
if CACHE_URL:
    CACHES = {"default": {"BACKEND": "webapp.db.redis_cache.RedisCache", "LOCATION": CACHE_URL,
                          "KEY_PREFIX": "dsm", "TIMEOUT": 3600}}  # fmt: skip
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "dsm"}}
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
# The nice level the demo's workers start at (compose: WORKER_NICE in .env), so the web server
# comes first when they share the cores; 0: the same priority.
WORKER_NICE = env_int("WORKER_NICE", 19)
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or REDIS_URL or "filesystem://"
BROKER_DIR = DATA_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),  # kombu's default is ./control in the cwd
        "store_processed": False,
    }
else:
    # Longer than any chunk of GPU work, so a slow chunk is not redelivered while it runs.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 6 * 3600)}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True  # job state lives in the database, not in a result backend
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
# Task modules and routes come from the one registry of kinds of long work (webapp.lifecycle.kinds).
# relevance: model-holding processes that lxt patches (never train); training: never patched;
# default: CPU work (planning, dataset builds, exports, imports).
CELERY_IMPORTS = lifecycle_kinds.task_modules()
CELERY_TASK_ROUTES = lifecycle_kinds.task_routes()
# Periodic rounds (webapp.lifecycle.kinds.PERIODIC), sent by Celery beat: one `celery -A workers
# beat` process per deployment (compose's `beat`; the demo's default worker runs it embedded).
# RETENTION_INTERVAL_SECONDS: how often retention looks for notes and exports past their time
# (webapp.erasure.retention); 0: never.
RETENTION_INTERVAL_SECONDS = env_float("RETENTION_INTERVAL_SECONDS", 3600.0)
CELERY_BEAT_SCHEDULE = lifecycle_kinds.beat_schedule({"RETENTION_INTERVAL_SECONDS": RETENTION_INTERVAL_SECONDS})
# A chunk of relevance prompts takes minutes on a CPU; these limits catch a stuck worker.
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 2 * 3600)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 2 * 3600 + 300)
CELERY_TASK_ALWAYS_EAGER = False
# Training and evaluation workers. A run checks for Cancel every TRAINING_POLL_SECONDS; a run or an
# evaluation past its time limit is stopped by Celery (a lost worker is caught by its heartbeat
# long before). TRAINING_LAUNCHER (e.g. "accelerate launch --multi_gpu --num_processes 4" or
# "torchrun --nproc_per_node 4") runs distributed kinds in a launcher of their own.
TRAINING_POLL_SECONDS = env_float("TRAINING_POLL_SECONDS", 1.0)
TRAINING_TIME_LIMIT = env_int("TRAINING_TIME_LIMIT", 14 * 24 * 3600)
TRAINING_LAUNCHER = env_str("TRAINING_LAUNCHER", "").strip()
# GB of memory per training GPU (an H200: 141); 0: unknown (CPU), and the launch form shows no
# memory plan (ml/training/memory.py). The GPU count is TRAINING_LAUNCHER's process count.
TRAINING_GPU_MEMORY_GB = env_float("TRAINING_GPU_MEMORY_GB", 0.0)
# Ended training runs and evaluations are logged to this MLflow tracking server
# (webapp.integrations.mlflow_log); unset: never. MLFLOW_UI_URL: the MLflow address the pages link to, when
# browsers reach it elsewhere than the workers do (unset: the tracking URI).
MLFLOW_TRACKING_URI = env_str("MLFLOW_TRACKING_URI", "").strip()
# One experiment per project, named MLFLOW_EXPERIMENT_PREFIX + its slug, so each project's group
# can be given access to its own experiment only (docs/operations.md, "MLflow"). A single experiment for every
# project (the former MLFLOW_EXPERIMENT_NAME) would put all projects' runs behind one permission.
if env_str("MLFLOW_EXPERIMENT_NAME"):
    raise ConfigError(
        "MLFLOW_EXPERIMENT_NAME is no longer read: each project logs to an experiment of its own "
        "(MLFLOW_EXPERIMENT_PREFIX + the project's slug). Unset it; set MLFLOW_EXPERIMENT_PREFIX to rename them."
    )
MLFLOW_EXPERIMENT_PREFIX = env_str("MLFLOW_EXPERIMENT_PREFIX", "decselfmask-").strip()
# MLflow's own variables for a tracking server with authentication on (its basic-auth app): the
# account the workers log with. Unset: no Authorization header.
MLFLOW_TRACKING_USERNAME = env_str("MLFLOW_TRACKING_USERNAME")
MLFLOW_TRACKING_PASSWORD = env_str("MLFLOW_TRACKING_PASSWORD")
MLFLOW_UI_URL = env_str("MLFLOW_UI_URL", "").strip()
# Several machines (docs/operations.md, "Beyond one machine"): TRAINING_LAUNCHER is torchrun's per-machine part
# (--nproc-per-node); each of TRAINING_NNODES machines starts one agent, all meeting at the c10d
# rendezvous TRAINING_RDZV_ENDPOINT (host:port on one of them); the others run `train_node`.
TRAINING_NNODES = env_int("TRAINING_NNODES", 1)
TRAINING_RDZV_ENDPOINT = env_str("TRAINING_RDZV_ENDPOINT", "").strip()
if TRAINING_NNODES < 1 or (TRAINING_NNODES > 1 and not TRAINING_RDZV_ENDPOINT):
    raise ConfigError(
        f"TRAINING_NNODES={TRAINING_NNODES}: must be 1, or more with TRAINING_RDZV_ENDPOINT=host:port set"
    )
EVALUATION_TIME_LIMIT = env_int("EVALUATION_TIME_LIMIT", 7 * 24 * 3600)
# A Macro F1 (and its CI) measured on fewer test items than this carries a warning on the run
# page and in the comparison: a few items make a noisy estimate. 0: never warn.
SMALL_TEST_SET_ITEMS = env_int("SMALL_TEST_SET_ITEMS", 30)
if SMALL_TEST_SET_ITEMS < 0:
    raise ConfigError(f"SMALL_TEST_SET_ITEMS={SMALL_TEST_SET_ITEMS} must be 0 or more")
# The code version recorded with runs and exports when there is no git checkout (an image): set
# DSM_CODE_VERSION (or GIT_COMMIT) when building it.
CODE_VERSION = env_str("DSM_CODE_VERSION") or env_str("GIT_COMMIT") or "unknown"
# torch's threads in each worker process (workers/celery_app.py sets them, and OMP_NUM_THREADS /
# MKL_NUM_THREADS for its children, when the worker starts, before any model is loaded). 0: left
# as they are (OMP_NUM_THREADS if set, else torch's default of one thread per core), right for a
# machine with ONE worker process. Where several worker processes share the CPU, give each its
# share: their sum at most the cores (e.g. `make demo` on N cores: relevance N-1, the other 1).
# Oversubscribed, a relevance prompt or training step runs 5-20x slower.
WORKER_TORCH_THREADS = env_int("WORKER_TORCH_THREADS", 0)
if WORKER_TORCH_THREADS < 0:
    raise ConfigError(f"WORKER_TORCH_THREADS={WORKER_TORCH_THREADS} must be 0 (automatic) or a positive number")
# Whether relevance workers run the common prefix of a note's prompts (the note) once for all
# its tasks (ml.relevance.sharing; the same maps to float rounding). "auto" (None): on the CPU,
# where it gives ~2x the prompts/s on 2 cores, and not on CUDA, where whole prompts batched were
# 2.6-4.1x faster on one H200 (ml.relevance.shares_prefix_by_default).
RELEVANCE_SHARE_PREFIX = env_auto_bool("RELEVANCE_SHARE_PREFIX")
# How long each process keeps the review pages' menus (model versions, tasks, peak profiles, a
# corpus's job templates and configurations) before reading them again (webapp.review.catalog);
# 0: read them on every request. A change made in the same process shows at once.
REVIEW_CATALOG_SECONDS = env_int("REVIEW_CATALOG_SECONDS", 10)
if REVIEW_CATALOG_SECONDS < 0:
    raise ConfigError(f"REVIEW_CATALOG_SECONDS={REVIEW_CATALOG_SECONDS} must be 0 (no copy) or a number of seconds")
# How long the review report trusts its last look at whether the decisions changed (its stamp, in
# the cache shared by web workers; webapp.review.report_store): a change shows as "newer figures
# coming" at most this late; 0: look on every load (a count over the scope's decisions).
REPORT_STAMP_SECONDS = env_int("REPORT_STAMP_SECONDS", 5)
if REPORT_STAMP_SECONDS < 0:
    raise ConfigError(f"REPORT_STAMP_SECONDS={REPORT_STAMP_SECONDS} must be 0 or a number of seconds")
# Artifacts every worker can reach (webapp.lib.storage, docs/operations.md "What must be shared"): where a
# trained model is published (empty: registered where it was written, under DATA_DIR; a shared
# path; file:// or s3://... for a copy each worker caches), fsspec options of that storage (JSON,
# e.g. {"endpoint_url": "http://minio:9000"}), and each worker's cache of fetched model folders.
ARTIFACT_STORAGE_URL = env_str("ARTIFACT_STORAGE_URL")
try:
    ARTIFACT_STORAGE_OPTIONS = json.loads(env_str("ARTIFACT_STORAGE_OPTIONS") or "{}")
except ValueError as exc:
    raise ConfigError(f"ARTIFACT_STORAGE_OPTIONS is not JSON ({exc})") from None
ARTIFACT_CACHE_DIR = env_path("ARTIFACT_CACHE_DIR", DATA_DIR / "artifact-cache")
ARTIFACT_CACHE_MAX_GB = env_float("ARTIFACT_CACHE_MAX_GB", 100.0)
# A relevance worker that cannot load the model of a job's chunk or of an evaluation releases it
# for another worker; one released this many times by every live worker fails. Each release resends it after
# RELEVANCE_RELEASE_DELAY_SECONDS x the releasing worker's count (at most 60 s).
RELEVANCE_RELEASE_LIMIT = env_int("RELEVANCE_RELEASE_LIMIT", 3)
RELEVANCE_RELEASE_DELAY_SECONDS = env_float("RELEVANCE_RELEASE_DELAY_SECONDS", 5.0)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# Outbound calls to URLs users enter (webhooks: webapp.lib.outbound): http(s) to public addresses
# only. OUTBOUND_ALLOWED_NETWORKS (CIDR, comma-separated; empty by default) lets the server reach
# networks it would otherwise refuse, e.g. a receiver inside the hospital ("10.20.0.0/24").
try:
    OUTBOUND_ALLOWED_NETWORKS = outbound.parse_networks(env_list("OUTBOUND_ALLOWED_NETWORKS", []))
except ValueError as exc:
    raise ConfigError(f"OUTBOUND_ALLOWED_NETWORKS: {exc}") from None
# Webhook deliveries (webapp.integrations.webhooks) run on a queue of their own ("webhooks"), so a slow
# receiver never delays imports, builds or exports. A failed attempt is tried again after
# WEBHOOK_BACKOFF_SECONDS x 2^(attempt-1), WEBHOOK_MAX_ATTEMPTS attempts in all, each waiting at
# most WEBHOOK_TIMEOUT_SECONDS for an answer.
WEBHOOK_BACKOFF_SECONDS = env_float("WEBHOOK_BACKOFF_SECONDS", 10.0)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 5)
WEBHOOK_TIMEOUT_SECONDS = env_float("WEBHOOK_TIMEOUT_SECONDS", 10.0)

# Logging: never log note text. Loggers get ids and counts only; every record reaches the root
# handlers, whose filter withholds exception messages, requests and row content (webapp.logs).
# "django" loses Django's own handlers: its console (DEBUG) printed each record a second time,
# unfiltered, and mail_admins would mail the request with its POST body. "celery.task", which a
# worker cuts off from the root, gets the console now, so the worker adds no unfiltered one.
LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"withhold_row_content": {"()": "webapp.logs.WithholdRowContent"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["withhold_row_content"]}
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": []},
        "django.db.backends": {"level": "WARNING"},
        "celery.task": {"handlers": ["console"], "propagate": False},
    },
}

DSM_DEFAULT_MODEL = env_str("DSM_DEFAULT_MODEL", "smollm2-135m-instruct")

# The lifecycle of long work (webapp.lifecycle): a running unit's worker beats every
# WORK_HEARTBEAT_SECONDS; silent for WORK_STALL_SECONDS, it is shown as stalled and queued again
# by the recovery sweeper that every worker runs every WORK_SWEEP_SECONDS; a unit queued longer
# than WORK_REQUEUE_GRACE_SECONDS while its queue is empty (its message was lost) is sent again.
WORK_HEARTBEAT_SECONDS = env_float("WORK_HEARTBEAT_SECONDS", 5.0)
WORK_STALL_SECONDS = env_int("WORK_STALL_SECONDS", 60)
WORK_SWEEP_SECONDS = env_float("WORK_SWEEP_SECONDS", 10.0)
WORK_REQUEUE_GRACE_SECONDS = env_int("WORK_REQUEUE_GRACE_SECONDS", 60)
# Rows an erasure deletes per transaction (webapp.erasure.erasing): locks held briefly, and a
# worker killed mid-erasure loses one batch.
ERASURE_BATCH = env_int("ERASURE_BATCH", 1000)
# De-identification (webapp.deid, docs/deidentification-in-the-app.md). DEID_SECRET keys the
# surrogates (which stand-in a name gets, how far a patient's dates move): unset, a key derived
# from SECRET_KEY and the project's id. Changing it (or SECRET_KEY when it is unset) changes the
# surrogates of notes de-identified afterwards; notes stored before keep theirs, so one patient's
# notes de-identified before and after read different stand-ins. DEID_MAPPING_KEY (a Fernet key:
# `python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`)
# encrypts the original -> surrogate pairs a project keeps when its policy asks; unset, no policy
# may keep them. Several keys, comma-separated: the first encrypts, every one decrypts (rotation:
# put the new key first, re-save nothing; pairs are encrypted again with it when next merged).
DEID_SECRET = env_str("DEID_SECRET")
DEID_MAPPING_KEY = env_str("DEID_MAPPING_KEY")
if DEID_MAPPING_KEY:
    from cryptography.fernet import Fernet

    try:
        [Fernet(key.strip()) for key in DEID_MAPPING_KEY.split(",") if key.strip()]
    except ValueError:
        raise ConfigError(
            "DEID_MAPPING_KEY is not a Fernet key (32 url-safe base64-encoded bytes; make one with "
            "cryptography's Fernet.generate_key())"
        ) from None
# Notes a de-identification job copies per transaction (webapp.deid_ops.deidentifying): a worker
# stopped mid-job loses one batch, and Resume goes on after the last batch committed.
DEID_BATCH = env_int("DEID_BATCH", 200)
if DEID_BATCH < 1:
    raise ConfigError(f"DEID_BATCH={DEID_BATCH} must be at least 1")
# Estimates before work (webapp.lifecycle.estimates): a launch estimated longer than
# LAUNCH_CONFIRM_SECONDS on one worker, or, with no measured rate, larger than
# LAUNCH_CONFIRM_AMOUNT units (prompts, maps, steps), is launched only once confirmed.
LAUNCH_CONFIRM_SECONDS = env_int("LAUNCH_CONFIRM_SECONDS", 600)
LAUNCH_CONFIRM_AMOUNT = env_int("LAUNCH_CONFIRM_AMOUNT", 1000)
if LAUNCH_CONFIRM_SECONDS < 0 or LAUNCH_CONFIRM_AMOUNT < 0:
    raise ConfigError("LAUNCH_CONFIRM_SECONDS and LAUNCH_CONFIRM_AMOUNT must be 0 (always confirm) or positive")
if WORK_HEARTBEAT_SECONDS * 3 > WORK_STALL_SECONDS:
    raise ConfigError("WORK_STALL_SECONDS must be at least 3 x WORK_HEARTBEAT_SECONDS, or live workers look lost")
