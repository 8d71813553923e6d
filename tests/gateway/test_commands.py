"""`manage.py autoscale_replay`: the saving and SLO figures, and one-line errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

SLICE = Path(__file__).parents[1] / "inference" / "data" / "azure_code_first_800.csv"


def replay(*args: str) -> str:
    out = io.StringIO()
    call_command("autoscale_replay", *args, stdout=out)
    return out.getvalue()


def test_the_replay_prints_the_saving_and_the_slo_figures():
    text = replay(str(SLICE))
    assert "800 requests" in text
    assert "saved against fixed at the peak:" in text
    assert "saved against the fixed fleet that is as good on the SLO:" in text
    assert "within SLO" in text


def test_the_replay_takes_its_settings_and_reports_them_as_json():
    data = json.loads(replay(str(SLICE), "--min", "1", "--max", "6", "--target", "2", "--cold-start", "5", "--json"))
    assert data["settings"]["min_replicas"] == 1 and data["settings"]["cold_start_s"] == 5.0
    assert data["autoscaled"]["peak_replicas"] <= 6
    assert 0 <= data["autoscaled"]["within_slo"] <= 1 and data["requests"] == 800


def test_a_quota_caps_the_replayed_fleet():
    data = json.loads(replay(str(SLICE), "--quota", "3", "--json"))
    assert data["autoscaled"]["peak_replicas"] == 3 and data["blocked"] > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["/nonexistent/trace.csv"], "no trace at /nonexistent/trace.csv"),
        ([str(SLICE), "--min", "5", "--max", "2"], "max_replicas must be at least min_replicas"),
        ([str(SLICE), "--column", "when"], "no column 'when'"),
        ([str(SLICE), "--panic-window", "90"], "panic window must be positive and no longer than the stable window"),
    ],
)
def test_bad_input_is_a_one_line_error(args, message):
    with pytest.raises(CommandError, match=message):
        replay(*args)
