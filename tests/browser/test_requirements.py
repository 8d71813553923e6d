"""Without Chromium the browser tests skip on a laptop and fail in CI: they never pass without having run."""

import pytest

from tests.browser.conftest import missing_browser, skip_or_fail


def test_a_missing_chromium_is_named(tmp_path):
    assert "install-chromium" in missing_browser(str(tmp_path / "no-chromium"))


def test_missing_browser_skips_on_a_developer_machine(monkeypatch):
    monkeypatch.delenv("AIPOOL_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception):
        skip_or_fail("chromium is missing")


def test_missing_browser_fails_where_it_is_required(monkeypatch):
    monkeypatch.setenv("AIPOOL_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="AIPOOL_REQUIRE_BROWSER=1"):
        skip_or_fail("chromium is missing")
