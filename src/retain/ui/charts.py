"""Charts as SVG drawn on the server: a line over time, bars, a histogram, and the provenance graph.
Every function returns SVG markup with a ``<title>`` and an ``aria-label`` (the chart's text
alternative); every value written into it is escaped. No script."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["bars", "graph", "histogram", "line", "xy"]

_W, _H, _PAD = 640, 220, 40


def _frame(label: str, body: str, width: int = _W, height: int = _H) -> str:
    text = escape(label)
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{text}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{text}</title>{body}</svg>'
    )


def _axis_labels(lo: float, hi: float, x_lo: str, x_hi: str) -> str:
    return (
        f'<text x="4" y="{_PAD - 8}" class="tick">{escape(_fmt(hi))}</text>'
        f'<text x="4" y="{_H - _PAD + 4}" class="tick">{escape(_fmt(lo))}</text>'
        f'<text x="{_PAD}" y="{_H - 8}" class="tick">{escape(x_lo)}</text>'
        f'<text x="{_W - 8}" y="{_H - 8}" class="tick" text-anchor="end">{escape(x_hi)}</text>'
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - 8}" y2="{_H - _PAD}" class="axis"/>'
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" class="axis"/>'
    )


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 10 or float(value).is_integer() else f"{value:.3g}"


def line(
    series: Sequence[tuple[str, Sequence[float]]],
    x_labels: tuple[str, str],
    label: str,
    *,
    ceiling: float | None = None,
) -> str:
    """Lines over evenly spaced points: ``series`` is ``[(name, values)]`` (values of equal length);
    ``ceiling`` draws a dashed horizontal line (a capacity). Empty series draw an empty frame."""
    values = [v for _, vs in series for v in vs] + ([ceiling] if ceiling is not None else [])
    if not values:
        return _frame(label, '<text x="50%" y="50%" text-anchor="middle">no data</text>')
    lo, hi = min(0.0, *values), max(values)
    hi = hi if hi > lo else lo + 1
    n = max(len(vs) for _, vs in series) if series else 1

    def xy(i: int, v: float) -> str:
        x = _PAD + (_W - _PAD - 8) * (i / max(n - 1, 1))
        y = _H - _PAD - (_H - 2 * _PAD) * ((v - lo) / (hi - lo))
        return f"{x:.1f},{y:.1f}"

    parts = [_axis_labels(lo, hi, *x_labels)]
    for k, (name, vs) in enumerate(series):
        points = " ".join(xy(i, v) for i, v in enumerate(vs))
        parts.append(
            f'<polyline class="s{k % 4}" fill="none" points="{points}"><title>{escape(name)}</title></polyline>'
        )
        parts.append(
            f'<text x="{_W - 8}" y="{_PAD - 8 - 14 * k}" class="tick s{k % 4}t" text-anchor="end">{escape(name)}</text>'
        )
    if ceiling is not None:
        y = xy(0, ceiling).split(",")[1]
        parts.append(f'<line x1="{_PAD}" y1="{y}" x2="{_W - 8}" y2="{y}" class="cap"><title>capacity</title></line>')
    return _frame(label, "".join(parts))


def xy(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]], label: str, axes: tuple[str, str] = ("x", "y")
) -> str:
    """Lines through ``(x, y)`` points, one per ``(name, points)`` (points sorted by x), with a dot
    per point titled with its values; ``axes`` names the x and y axes. y spans [0, max(1, top)]."""
    points = [p for _, ps in series for p in ps]
    if not points:
        return _frame(label, '<text x="50%" y="50%" text-anchor="middle">no data</text>')
    x_lo, x_hi = min(x for x, _ in points), max(x for x, _ in points)
    x_hi = x_hi if x_hi > x_lo else x_lo + 1
    hi = max(1.0, max(y for _, y in points))

    def at(x: float, y: float) -> tuple[float, float]:
        return _PAD + (_W - _PAD - 8) * (x - x_lo) / (x_hi - x_lo), _H - _PAD - (_H - 2 * _PAD) * (y / hi)

    parts = [_axis_labels(0.0, hi, f"{axes[0]} {_fmt(x_lo)}", f"{axes[0]} {_fmt(x_hi)}")]
    parts.append(f'<text x="{_PAD + 4}" y="{_PAD + 4}" class="tick">{escape(axes[1])}</text>')
    for k, (name, ps) in enumerate(series):
        coords = [at(x, y) for x, y in ps]
        line_points = " ".join(f"{a:.1f},{b:.1f}" for a, b in coords)
        parts.append(
            f'<polyline class="s{k % 4}" fill="none" points="{line_points}"><title>{escape(name)}</title></polyline>'
        )
        for (a, b), (x, y) in zip(coords, ps, strict=True):
            tip = escape(f"{name}: {axes[0]} {_fmt(x)}, {axes[1]} {_fmt(y)}")
            parts.append(f'<circle class="s{k % 4}" cx="{a:.1f}" cy="{b:.1f}" r="3"><title>{tip}</title></circle>')
        parts.append(
            f'<text x="{_W - 8}" y="{_PAD - 8 - 14 * k}" class="tick s{k % 4}t" text-anchor="end">{escape(name)}</text>'
        )
    return _frame(label, "".join(parts))


def bars(items: Sequence[tuple[str, float]], label: str) -> str:
    """Horizontal bars, one per ``(name, value)``, longest = largest value."""
    if not items:
        return _frame(label, '<text x="50%" y="50%" text-anchor="middle">no data</text>', height=60)
    row, top = 22, max(v for _, v in items) or 1
    height = row * len(items) + 10
    parts = []
    for i, (name, value) in enumerate(items):
        width = (_W - 220) * value / top
        y = 5 + i * row
        parts.append(
            f'<text x="0" y="{y + 15}" class="tick">{escape(name)}</text>'
            f'<rect x="160" y="{y}" width="{width:.1f}" height="{row - 6}" class="bar"/>'
            f'<text x="{165 + width:.1f}" y="{y + 15}" class="tick">{escape(_fmt(value))}</text>'
        )
    return _frame(label, "".join(parts), height=height)


def histogram(values: Sequence[float], label: str, *, bins: int = 10, lo: float = 0.0, hi: float = 1.0) -> str:
    """Counts of ``values`` in ``bins`` equal bins over [lo, hi] (values outside are clipped)."""
    counts = [0] * bins
    for v in values:
        i = int((min(max(v, lo), hi) - lo) / (hi - lo) * bins)
        counts[min(i, bins - 1)] += 1
    top = max(counts) or 1
    step = (_W - _PAD - 8) / bins
    parts = [_axis_labels(0, top, _fmt(lo), _fmt(hi))]
    for i, c in enumerate(counts):
        h = (_H - 2 * _PAD) * c / top
        x = _PAD + i * step
        edge = lo + (hi - lo) * i / bins
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{_H - _PAD - h:.1f}" width="{step - 2:.1f}" height="{h:.1f}" class="bar">'
            f"<title>{escape(f'{edge:.2f}')}+: {c}</title></rect>"
        )
    return _frame(label, "".join(parts))


def graph(columns: Sequence[Sequence[tuple[str, str, str]]], links: Sequence[tuple[str, str]], label: str) -> str:
    """A layered graph: ``columns`` left to right, each a list of nodes ``(key, text, css class)``;
    ``links`` join node keys. Node texts are shortened to fit; the full text is the node's title."""
    gap, box_w, box_h = 18, 190, 26
    tallest = max((len(c) for c in columns), default=1)
    height = max(tallest * (box_h + gap) + gap, 80)
    width = max(len(columns), 1) * (box_w + 60) + 20
    where: dict[str, tuple[float, float]] = {}
    nodes = []
    for ci, column in enumerate(columns):
        x = 10 + ci * (box_w + 60)
        for ri, (key, text, css) in enumerate(column):
            y = gap + ri * (box_h + gap)
            where[key] = (x, y)
            short = text if len(text) <= 26 else text[:25] + "…"
            nodes.append(
                f'<g class="node {escape(css)}"><title>{escape(text)}</title>'
                f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="4"/>'
                f'<text x="{x + 6}" y="{y + 17}">{escape(short)}</text></g>'
            )
    edges = []
    for a, b in links:
        if a in where and b in where:
            (x1, y1), (x2, y2) = where[a], where[b]
            edges.append(
                f'<line x1="{x1 + box_w}" y1="{y1 + box_h / 2}" x2="{x2}" y2="{y2 + box_h / 2}" class="link"/>'
            )
    return _frame(label, "".join(edges) + "".join(nodes), width=width, height=height)
