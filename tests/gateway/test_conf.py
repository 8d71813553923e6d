"""The gateway's and autoscaler's settings come from the environment at call time, with clear errors."""

from __future__ import annotations

import pytest

from gateway import conf


def test_knatives_windows_by_default(monkeypatch):
    for name in ("AIPOOL_AUTOSCALE_STABLE_WINDOW", "AIPOOL_AUTOSCALE_PANIC_WINDOW", "AIPOOL_AUTOSCALE_SCALE_DOWN_RATE"):
        monkeypatch.delenv(name, raising=False)
    policy = conf.autoscale_policy()
    assert (policy.stable_window_s, policy.panic_window_s, policy.max_scale_down_rate) == (60.0, 6.0, 2.0)


def test_the_environment_shortens_the_windows_when_read_not_at_import(monkeypatch):
    monkeypatch.setenv("AIPOOL_AUTOSCALE_STABLE_WINDOW", "10")
    monkeypatch.setenv("AIPOOL_AUTOSCALE_PANIC_WINDOW", "3")
    monkeypatch.setenv("AIPOOL_AUTOSCALE_SCALE_DOWN_RATE", "1.5")
    policy = conf.autoscale_policy()
    assert (policy.stable_window_s, policy.panic_window_s, policy.max_scale_down_rate) == (10.0, 3.0, 1.5)


def test_a_bad_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("AIPOOL_AUTOSCALE_SCALE_DOWN_RATE", "fast")
    with pytest.raises(ValueError, match="AIPOOL_AUTOSCALE_SCALE_DOWN_RATE must be a number, got 'fast'"):
        conf.autoscale_policy()
    monkeypatch.setenv("AIPOOL_GATEWAY_PORT", "eighty")
    with pytest.raises(ValueError, match="AIPOOL_GATEWAY_PORT must be an integer"):
        conf.port()


def test_the_gateway_port_and_host(monkeypatch):
    monkeypatch.delenv("AIPOOL_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("AIPOOL_GATEWAY_HOST", raising=False)
    monkeypatch.setenv("AIPOOL_HOST", "0.0.0.0")
    assert (conf.host(), conf.port()) == ("0.0.0.0", 8001)
    monkeypatch.setenv("AIPOOL_GATEWAY_HOST", "127.0.0.2")
    monkeypatch.setenv("AIPOOL_GATEWAY_PORT", "18280")
    assert (conf.host(), conf.port()) == ("127.0.0.2", 18280)
