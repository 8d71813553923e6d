"""PNG plots of replay reports (report dicts, as stored and as printed with --json). matplotlib, Agg backend."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

PLOTS = ("times", "tenants", "pool")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display: servers, workers and CI
    import matplotlib.pyplot as plt

    return plt


def _bars(ax, labels: Sequence[str], series: dict[str, Sequence[float]], ylabel: str, title: str) -> None:
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        ax.bar([x + i * width for x in range(len(labels))], values, width, label=name)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(labels))], labels)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small")


def render(reports: Sequence[dict], name: str) -> bytes:
    """One plot as PNG bytes: `times` (JCT and wait), `tenants` (mean wait per tenant), `pool` (use, fragmentation)."""
    if name not in PLOTS:
        raise ValueError(f"unknown plot {name!r}; plots: {', '.join(PLOTS)}")
    plt = _pyplot()
    policies = [r["policy"] for r in reports]
    if name == "times":
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, metric in zip(axes, ("jct", "wait"), strict=True):
            series = {stat: [r[metric][stat] / 3600 for r in reports] for stat in ("mean", "median", "p99")}
            _bars(ax, policies, series, "hours", f"job {'completion time' if metric == 'jct' else 'wait'}")
    elif name == "tenants":
        fig, ax = plt.subplots(figsize=(10, 4))
        tenants = sorted({t for r in reports for t in r["tenant_wait"]})
        series = {r["policy"]: [r["tenant_wait"].get(t, 0.0) / 3600 for t in tenants] for r in reports}
        _bars(ax, tenants, series, "mean wait, hours", "wait per tenant")
        ax.tick_params(axis="x", labelrotation=45)
    else:
        fig, ax = plt.subplots(figsize=(8, 4))
        series = {
            "utilisation": [r["utilisation"] for r in reports],
            "busy while jobs wait": [r.get("busy_while_waiting", 0.0) for r in reports],
            "fragmentation": [r["fragmentation"] for r in reports],
            "Jain fairness": [r["jain_fairness"] for r in reports],
        }
        _bars(ax, policies, series, "share", "pool")
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=90)
    plt.close(fig)
    return out.getvalue()


def write_plots(reports: Sequence[dict], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in PLOTS:
        path = folder / f"{name}.png"
        path.write_bytes(render(reports, name))
        paths.append(path)
    return paths
