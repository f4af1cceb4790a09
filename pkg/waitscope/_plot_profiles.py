"""Call-path profiles of :mod:`waitscope.plot`: delay costs and the critical path."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ._plot_base import MODEL_COLORS, Axes, Figure, _mix, _short, _single_axes
from .result import AnalysisResult


def delay_profile(results: Mapping[str, AnalysisResult] | AnalysisResult, *, top: int = 10,
                  ax: Axes | None = None) -> Figure:
    """Short- and long-term delay costs per call path (stacked horizontal bars).

    `results` is one result of a delay analysis or a mapping from labels to
    results, e.g. ``{"proportional": r1, "wait-first": r2}``: then every
    call path has one bar per result, side by side.  A bar is the costs
    charged to that call path over all locations and wait-state classes:
    short-term (dark) plus long-term (light).  The `top` call paths with the
    largest costs (in any result) are shown, the largest at the top.
    Results of the same trace are expected (call paths are matched by
    name).  A result without delay analysis raises ValueError.  Returns
    the Figure.
    """
    named = {(r.delay_model or "delay costs"): r for r in [results]} if isinstance(results, AnalysisResult) \
        else dict(results)
    if not named:
        raise ValueError("no results to show")
    names: list[str] = []
    seen: set[str] = set()
    per: dict[str, tuple[dict[str, float], dict[str, float]]] = {}
    for label, r in named.items():
        short = np.asarray(r.delay_short).sum(axis=1)
        long_ = np.asarray(r.delay_long).sum(axis=1)
        per[label] = (dict(zip(r.callpath_names, short)), dict(zip(r.callpath_names, long_)))
        for n in r.callpath_names:
            if n not in seen:
                seen.add(n)
                names.append(n)
    total = np.array([max(s.get(n, 0.0) + lg.get(n, 0.0) for s, lg in per.values()) for n in names])
    order = [i for i in np.argsort(-total, kind="stable")[:max(int(top), 1)] if total[i] > 0]
    shown = [names[i] for i in order]
    n_models = len(named)
    fig, ax = _single_axes(ax, (8.0, 1.2 + 0.45 * max(len(shown), 1) * max(n_models, 1) ** 0.5))
    height = 0.8 / n_models
    y = np.arange(len(shown), dtype=np.float64)
    for k, (label, (short, long_)) in enumerate(per.items()):
        pos = y - 0.4 + height * (k + 0.5)
        s = np.array([short.get(n, 0.0) for n in shown])
        lg = np.array([long_.get(n, 0.0) for n in shown])
        color = MODEL_COLORS[k % len(MODEL_COLORS)]
        prefix = f"{label}: " if n_models > 1 or label != "delay costs" else ""
        ax.barh(pos, s, height=height, color=color, label=f"{prefix}short-term", gid=f"short:{label}")
        ax.barh(pos, lg, left=s, height=height, color=_mix(color, 0.55), label=f"{prefix}long-term",
                gid=f"long:{label}")
    ax.set_yticks(y)
    ax.set_yticklabels([_short(n) for n in shown])
    ax.set_ylim(max(len(shown), 1) - 0.5, -0.5)
    ax.set_xlabel("delay costs (s)")
    ax.legend(loc="lower right", fontsize="small")
    if not shown:
        ax.set_title("no delay costs", fontsize="small")
    return fig


def activity_average(result: AnalysisResult) -> np.ndarray:
    """Average time per process of every call path without wait states (avg(i) of Böhme et al., IPDPS 2012).

    The activity time of the critical-path analysis (``critical_path_activities``
    plus ``non_critical_path_activities``) summed over locations, divided by
    the number of locations that ran (time > 0): in a hybrid MPI+OpenMP run
    every thread counts, as in the critical-path imbalance.
    """
    activity = result.by_callpath("critical_path_activities") + result.by_callpath("non_critical_path_activities")
    procs = int(np.count_nonzero(result.by_location("time") > 0))
    return activity / max(procs, 1)


PROFILE_MIN_SHARE = 1e-3
""":func:`critical_path_profile` leaves out call paths with less than this share of the path
(they would be bars of no visible length); its title says how many."""


def critical_path_profile(result: AnalysisResult, *, top: int = 10, ax: Axes | None = None) -> Figure:
    """The critical-path profile (Böhme et al., IPDPS 2012, Fig. 1b): per call path, time on the critical path
    next to the average time per process.

    The critical-path bar (dark) has its critical-path imbalance (the part
    above the average; ``critical_path.imbalance``) hatched; the grey bar
    below it is the average activity time per process without wait states
    (:func:`activity_average`).  The `top` call paths with the most
    critical-path time are shown, the largest at the top; call paths with
    less than :data:`PROFILE_MIN_SHARE` (0.1 %) of the path are left out.  Needs a result
    of ``analyze(critical_path=True)`` (ValueError otherwise).  Returns the
    Figure.
    """
    cp = result.critical_path
    on_path = np.asarray(cp.by_callpath, dtype=np.float64)
    imbalance = np.asarray(cp.imbalance, dtype=np.float64)
    average = activity_average(result)
    least = PROFILE_MIN_SHARE * cp.length
    visible = [int(i) for i in np.argsort(-on_path, kind="stable") if on_path[i] > least]
    order = visible[:max(int(top), 1)]
    hidden = int(np.count_nonzero(on_path > 0)) - len(visible)
    fig, ax = _single_axes(ax, (8.0, 1.2 + 0.55 * max(len(order), 1)))
    y = np.arange(len(order), dtype=np.float64)
    h = 0.38
    path = on_path[order]
    imb = np.minimum(imbalance[order], path)
    color = "#08306b"
    ax.barh(y - h / 2, path - imb, height=h, color=color, label="critical path", gid="critical_path")
    ax.barh(y - h / 2, imb, left=path - imb, height=h, color=_mix(color, 0.45), hatch="///", edgecolor="white",
            linewidth=0, label="critical-path imbalance", gid="imbalance")
    per = "per location (thread)" if getattr(result, "has_threads", False) else "per process"
    ax.barh(y + h / 2, average[order], height=h, color="#9e9e9e", label=f"average {per}", gid="average")
    ax.set_yticks(y)
    ax.set_yticklabels([_short(result.callpath_names[i]) for i in order])
    ax.set_ylim(max(len(order), 1) - 0.5, -0.5)
    ax.set_xlabel("time (s)")
    note = f" ({hidden} call path{'s' if hidden > 1 else ''} under {100 * PROFILE_MIN_SHARE:g} % of it left out)" \
        if hidden > 0 else ""
    ax.set_title(f"critical path: {cp.length:.6g} s{note}", fontsize="medium")
    ax.legend(loc="lower right", fontsize="small")
    return fig
