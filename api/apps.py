from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "REST API"

    def ready(self) -> None:
        # Registers the OpenAPI extensions (Bearer auth scheme) with drf-spectacular.
        from api import schema  # noqa: F401
