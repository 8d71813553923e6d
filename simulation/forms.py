"""Forms of the staff pages: what to replay, and a proposed quota change on a past window."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.utils import timezone

from scheduler.policies import POLICIES
from scheduler.workload import WorkloadError, read_quotas

MAX_UPLOAD = 20 * 1024 * 1024
SOURCE_CHOICES = [
    ("openb", "openb trace (Alibaba GPU pods, its 1,213 nodes)"),
    ("history", "this pool's job history (window below)"),
    ("csv", "canonical CSV (upload)"),
    ("sacct", "sacct --json output (upload)"),
]


def _default_start():
    return (timezone.now() - timedelta(days=30)).replace(microsecond=0)


def _quota_lines(text: str) -> str:
    try:
        read_quotas(text)
    except WorkloadError as exc:
        raise forms.ValidationError(str(exc)) from None
    return text


class WindowMixin(forms.Form):
    start = forms.DateTimeField(required=False, help_text="UTC, e.g. 2026-11-01 00:00")
    end = forms.DateTimeField(required=False, help_text="UTC; empty: now")

    def clean_window(self, cleaned: dict) -> None:
        start, end = cleaned.get("start") or _default_start(), cleaned.get("end") or timezone.now()
        if end <= start:
            self.add_error("end", "must be after the start")
        cleaned["start"], cleaned["end"] = start, end


class CompareForm(WindowMixin):
    source = forms.ChoiceField(choices=SOURCE_CHOICES, initial="openb")
    upload = forms.FileField(required=False, help_text="for CSV and sacct: the workload file")
    policies = forms.MultipleChoiceField(
        choices=[(name, cls.title) for name, cls in POLICIES.items()],
        initial=list(POLICIES),
        widget=forms.CheckboxSelectMultiple,
    )
    load = forms.FloatField(initial=1.0, min_value=0.01, max_value=10000, help_text="arrivals this many times as fast")
    pool_fraction = forms.FloatField(
        initial=1.0, min_value=0.001, max_value=1.0, help_text="keep every (1/F)th node: a smaller pool"
    )
    tenants = forms.IntegerField(initial=8, min_value=1, max_value=1000, help_text="for traces without tenants")
    quotas = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="limits to replay with, one a line: tenant tenant-3 GrpTRES=accelerator=64",
        validators=[_quota_lines],
    )

    def clean(self):
        cleaned = super().clean()
        source, upload = cleaned.get("source"), cleaned.get("upload")
        if source in ("csv", "sacct"):
            if upload is None:
                self.add_error("upload", f"a {source} file is needed for this source")
            elif upload.size > MAX_UPLOAD:
                self.add_error("upload", f"at most {MAX_UPLOAD // (1024 * 1024)} MB")
            else:
                try:
                    cleaned["data"] = upload.read().decode("utf-8")
                except UnicodeDecodeError:
                    self.add_error("upload", "not UTF-8 text")
        if source == "history":
            self.clean_window(cleaned)
        return cleaned

    def params(self) -> dict:
        data = self.cleaned_data
        params = {
            "source": data["source"],
            "policies": data["policies"],
            "load": data["load"],
            "pool_fraction": data["pool_fraction"],
            "tenants": data["tenants"],
            "quotas": data.get("quotas") or "",
        }
        if data["source"] in ("csv", "sacct"):
            params["data"] = data["data"]
        if data["source"] == "history":
            params |= {"start": data["start"].isoformat(), "end": data["end"].isoformat()}
        return params


class WhatIfForm(WindowMixin):
    quotas = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="proposed limits, one a line: tenant acme GrpTRES=accelerator=16 or group ai-team GrpJobs=4",
        validators=[_quota_lines],
    )

    def clean(self):
        cleaned = super().clean()
        self.clean_window(cleaned)
        return cleaned

    def params(self) -> dict:
        data = self.cleaned_data
        return {
            "source": "history",
            "start": data["start"].isoformat(),
            "end": data["end"].isoformat(),
            "quotas": data["quotas"],
        }
