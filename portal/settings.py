"""aipool settings: everything comes from the environment (see README "Configuration").

With nothing set, aipool runs embedded: SQLite and a Celery broker on SQLite under AIPOOL_DATA_DIR, the local cluster.
"""

from pathlib import Path

import environ

from portal.env import data_dir, env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = data_dir()

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "aipool-insecure-development-key-change-me-in-production")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "cluster",
    "tenants",
    "jobs",
    "api",
    "portal",
    "registry",
    "inference",
    "monitoring",
    "accounting",
    "notifications",
    "simulation",
    "gateway",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def _database() -> dict:
    url = env_str("DATABASE_URL")
    if url:
        db = environ.Env.db_url_config(url)
        db.setdefault("CONN_MAX_AGE", env_int("AIPOOL_DB_CONN_MAX_AGE", 60))
        db["CONN_HEALTH_CHECKS"] = True
        return db
    # WAL + IMMEDIATE transactions let the web server, the worker and beat share one SQLite file without
    # "database is locked" errors on upgrade from a read to a write lock.
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DATA_DIR / "aipool.sqlite3",
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns on every request when it is missing
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
# Password-reset mails print to the console unless a real backend is configured (DJANGO_EMAIL_BACKEND, EMAIL_HOST...).
EMAIL_BACKEND = env_str("DJANGO_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
DEFAULT_FROM_EMAIL = env_str("DJANGO_DEFAULT_FROM_EMAIL", "aipool@localhost")

# --- Celery -------------------------------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or env_str("REDIS_URL") or f"sqla+sqlite:///{DATA_DIR}/broker.sqlite3"
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ALWAYS_EAGER = env_bool("AIPOOL_CELERY_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
if CELERY_BROKER_URL.startswith("sqla+"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {"connect_args": {"timeout": 30}}

# --- aipool ---------------------------------------------------------------------------------------------------
AIPOOL_BACKEND = env_str("AIPOOL_BACKEND", "local")
AIPOOL_POOL_FILE = env_str("AIPOOL_POOL_FILE", str(BASE_DIR / "cluster" / "pools" / "default.yaml"))
AIPOOL_RECONCILE_SECONDS = env_int("AIPOOL_RECONCILE_SECONDS", 2)
# The local backend runs commands as the portal's OS user; off by default for non-staff outside the demo install.
AIPOOL_LOCAL_BACKEND_OPEN = env_bool("AIPOOL_LOCAL_BACKEND_OPEN", True)

# --- REST framework -------------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "api.schema.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated", "api.permissions.TokenScope"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.CursorPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.TokenRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"api": env_str("AIPOOL_API_RATE", "600/min")},
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "aipool API",
    "DESCRIPTION": "Self-service REST API of an AI accelerator compute pool.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # Swagger UI assets from the drf-spectacular-sidecar package: the docs page loads nothing from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "JobStateEnum": "vocab.states.JobState",
        "NodeStateEnum": ["IDLE", "MIXED", "ALLOCATED", "DRAIN", "DOWN"],
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("AIPOOL_LOG_LEVEL", "INFO")},
}
# AIPOOL_LOG_FORMAT=json: one JSON object per line (docs/monitoring.md).
if env_str("AIPOOL_LOG_FORMAT", "text") == "json":
    LOGGING["formatters"] = {"json": {"()": "monitoring.jsonlog.JsonFormatter"}}
    LOGGING["handlers"]["console"]["formatter"] = "json"

# Seconds in one job-time-limit minute. 60 in production; tests and demos shorten it to watch TIMEOUT happen.
AIPOOL_SECONDS_PER_MINUTE = env_int("AIPOOL_SECONDS_PER_MINUTE", 60)
AIPOOL_KILL_GRACE_SECONDS = env_int("AIPOOL_KILL_GRACE_SECONDS", 10)

# --- Slurm backend (AIPOOL_BACKEND=slurm; docs/slurm.md) ---------------------------------------------------------
AIPOOL_SLURM_CONF = env_str("SLURM_CONF", "/etc/slurm/slurm.conf")
# Job output files (default DATA_DIR/slurm): readable by the portal, writable by the jobs' owners, on a file system
# the nodes share in a real cluster.
AIPOOL_SLURM_LOG_DIR = env_str("AIPOOL_SLURM_LOG_DIR", "")
# Slurm job names are <prefix>-<job id>-<run>: distinct per portal when several share one Slurm.
AIPOOL_SLURM_JOB_PREFIX = env_str("AIPOOL_SLURM_JOB_PREFIX", "aipool")
# Accounts aipool creates carry this Organization; only those are ever removed by the limits sync.
AIPOOL_SLURM_ORGANIZATION = env_str("AIPOOL_SLURM_ORGANIZATION", "aipool")
AIPOOL_SLURM_TIMEOUT = env_int("AIPOOL_SLURM_TIMEOUT", 30)
AIPOOL_SLURM_SYNC_SECONDS = env_int("AIPOOL_SLURM_SYNC_SECONDS", 300)

# Periodic tasks, all in one place.
CELERY_BEAT_SCHEDULE = {
    "reconcile-and-schedule": {"task": "jobs.tasks.reconcile", "schedule": float(AIPOOL_RECONCILE_SECONDS)},
    "slurm-limits-sync": {"task": "jobs.tasks.sync_backend_limits", "schedule": float(AIPOOL_SLURM_SYNC_SECONDS)},
    "registry-scrub": {"task": "registry.tasks.scrub", "schedule": float(env_int("AIPOOL_SCRUB_SECONDS", 3600))},
    "registry-publish-outputs": {"task": "registry.tasks.publish_pending_outputs", "schedule": 30.0},
}
# Each app's periodic tasks: one line per app, so that each is edited by its owner only.
CELERY_BEAT_SCHEDULE |= {"inference-reconcile": {"task": "inference.tasks.reconcile", "schedule": 5.0}}  # inference
CELERY_BEAT_SCHEDULE |= {  # gateway
    "gateway-autoscale": {"task": "gateway.tasks.autoscale", "schedule": float(env_int("AIPOOL_AUTOSCALE_SECONDS", 2))},
}
CELERY_BEAT_SCHEDULE |= {  # monitoring
    "monitor-sample": {"task": "monitoring.tasks.sample", "schedule": float(env_int("AIPOOL_MONITOR_SECONDS", 10))},
    "monitor-rollup": {"task": "monitoring.tasks.rollup", "schedule": 60.0},
    "monitor-celery-latency": {"task": "monitoring.tasks.send_latency_probe", "schedule": 30.0},
}
CELERY_BEAT_SCHEDULE |= {}  # accounting
CELERY_BEAT_SCHEDULE |= {  # notifications
    "notify-thresholds": {"task": "notifications.tasks.check_thresholds", "schedule": 60.0},
    "notify-retry-stalled": {"task": "notifications.tasks.retry_stalled", "schedule": 60.0},
}
CELERY_BEAT_SCHEDULE |= {}  # simulation
