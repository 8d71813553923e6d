from django.apps import AppConfig


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "Model and dataset repository"

    def ready(self) -> None:
        # Jobs know nothing of the repository; the repository plugs into the jobs' extension points.
        from jobs import hooks
        from registry import jobio

        hooks.register_spec_field("inputs", jobio.parse_inputs)
        hooks.register_spec_field("outputs", jobio.parse_outputs)
        hooks.register_submit_hook(jobio.record_job_io)
        hooks.register_env_provider(jobio.launch_environment)
        jobio.connect_signals()
