"""Extension points for apps that build on jobs (the model repository, …), so jobs imports none of them.

An app registers its functions in its ``AppConfig.ready()``:

- a *spec field* is an extra top-level field of the job request (e.g. ``inputs``); its parser turns the raw value into
  plain JSON data or raises ``ValueError``/``ValidationError`` with a message for that field;
- a *submit hook* runs inside the submit transaction with the new job and its spec, and may refuse (ValidationError);
- an *environment provider* adds variables to a run's environment at launch.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ValidationError

_spec_fields: dict[str, Callable] = {}
_submit_hooks: list[Callable] = []
_env_providers: list[Callable] = []


def register_spec_field(name: str, parse: Callable) -> None:
    _spec_fields[name] = parse


def register_submit_hook(hook: Callable) -> None:
    if hook not in _submit_hooks:
        _submit_hooks.append(hook)


def register_env_provider(provider: Callable) -> None:
    if provider not in _env_providers:
        _env_providers.append(provider)


def spec_field_names() -> tuple[str, ...]:
    return tuple(_spec_fields)


def parse_extensions(data: dict, errors: dict) -> dict:
    """The registered extra fields present in `data`, parsed; problems go into `errors` like any other field's."""
    extensions = {}
    for name, parse in _spec_fields.items():
        raw = data.get(name)
        if raw in (None, "", [], {}):
            continue
        try:
            extensions[name] = parse(raw)
        except ValidationError as exc:
            errors[name] = exc.messages
        except ValueError as exc:
            errors[name] = [str(exc)]
    return extensions


def job_submitted(*, job, spec, user) -> None:
    for hook in _submit_hooks:
        hook(job=job, spec=spec, user=user)


def launch_environment(job) -> dict[str, str]:
    environment: dict[str, str] = {}
    for provider in _env_providers:
        environment.update(provider(job) or {})
    return environment
