"""The SDK's exceptions: each message names what is wrong and what to do instead."""


class SDKError(Exception):
    """Base class of every error the SDK raises on purpose."""


class EnvironmentConfigError(SDKError):
    """The distributed environment (RANK, WORLD_SIZE, ...) is missing or inconsistent."""


class DeviceError(SDKError):
    """What was asked for needs a device or backend this process does not have."""


class StrategyError(SDKError):
    """A parallelism strategy cannot run here, or was combined with something it does not support."""


class CheckpointError(SDKError):
    """A checkpoint could not be written or no usable checkpoint could be read."""


class DatasetError(SDKError):
    """A dataset directory is missing, empty or inconsistent."""
