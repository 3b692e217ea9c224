"""Server-rendered SVG charts for the console dashboard: stacked daily bars and horizontal bars.

No script and no asset from outside; every label is escaped, and each bar may link to the list behind it.
"""
from django.utils.html import escape
from django.utils.safestring import mark_safe

PALETTE = ("#417690", "#e0a030", "#ba2121", "#5b9e5b", "#8a63b3", "#c76f9e", "#4fa3a5", "#9c7a4b", "#6b7b8c",
           "#d05f2a")


def color(i):
    return PALETTE[i % len(PALETTE)]


def stacked_days(*, labels, series, links=None, title, width=640, height=220, css_class="chart"):
    """Stacked bars, one per day; `series` is {name: [value per day]} and `links` {name: url}."""
    links = links or {}
    names = [n for n, values in series.items() if any(values)]
    totals = [sum(series[n][i] for n in names) for i in range(len(labels))]
    top = max(totals + [1])
    left, bottom, right, top_pad = 36, 28, 8, 10
    plot_w, plot_h = width - left - right, height - bottom - top_pad
    step = plot_w / max(1, len(labels))
    bar_w = max(2.0, step * 0.7)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="{escape(css_class)}" role="img" '
             f'viewBox="0 0 {width} {height}" width="100%" preserveAspectRatio="xMidYMid meet">'
             f"<title>{escape(title)}</title>"]
    for frac in (0, 0.5, 1):
        if frac == 0.5 and top % 2:
            continue  # no gridline at a fractional count
        y = top_pad + plot_h * (1 - frac)
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end" fill="#666">'
                     f"{int(top * frac)}</text>")
    for i, label in enumerate(labels):
        x = left + i * step + (step - bar_w) / 2
        y = top_pad + plot_h
        for name in names:
            value = series[name][i]
            if not value:
                continue
            h = plot_h * value / top
            y -= h
            rect = (f'<rect class="bar" data-series="{escape(name)}" data-value="{value}" x="{x:.1f}" '
                    f'y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" fill="{color(list(series).index(name))}">'
                    f"<title>{escape(label)}: {escape(name)} {value}</title></rect>")
            parts.append(f'<a href="{escape(links[name])}">{rect}</a>' if name in links else rect)
        if len(labels) <= 16 or i % 2 == 0:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{height - 10}" font-size="9" text-anchor="middle" '
                         f'fill="#666">{escape(label)}</text>')
    if not names:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="#999" font-size="13">'
                     "nothing in this window</text>")
    parts.append("</svg>")
    return mark_safe("".join(parts))


def hbars(*, rows, title, width=640, bar_height=18, css_class="chart", unit=""):
    """Horizontal bars: rows are (label, value, url or None, colour index)."""
    rows = list(rows)
    top = max([r[1] for r in rows] + [1])
    label_w, right = 170, 60
    height = max(1, len(rows)) * (bar_height + 6) + 6
    plot_w = width - label_w - right
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="{escape(css_class)}" role="img" '
             f'viewBox="0 0 {width} {height}" width="100%" preserveAspectRatio="xMinYMin meet">'
             f"<title>{escape(title)}</title>"]
    for i, (label, value, url, colour) in enumerate(rows):
        y = 6 + i * (bar_height + 6)
        w = plot_w * value / top if value else 0
        shown = label if len(label) <= 26 else label[:25] + "…"
        bar = (f'<rect class="bar" data-label="{escape(label)}" data-value="{value}" x="{label_w}" y="{y}" '
               f'width="{max(w, 1):.1f}" height="{bar_height}" fill="{color(colour)}" rx="2">'
               f"<title>{escape(label)}: {value}{escape(unit)}</title></rect>")
        parts.append(f'<text x="{label_w - 6}" y="{y + bar_height - 5}" font-size="11" text-anchor="end" '
                     f'fill="#333">{escape(shown)}</text>')
        parts.append(f'<a href="{escape(url)}">{bar}</a>' if url else bar)
        parts.append(f'<text x="{label_w + w + 5:.1f}" y="{y + bar_height - 5}" font-size="11" fill="#333">'
                     f"{value}{escape(unit)}</text>")
    if not rows:
        parts.append(f'<text x="{width / 2}" y="{height / 2 + 4}" text-anchor="middle" fill="#999" '
                     'font-size="12">nothing yet</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))


def legend(names, links=None, only=None):
    """An HTML legend for a chart's series (colours as in stacked_days, which keeps the series order);
    `only` limits it to the series present."""
    links = links or {}
    items = []
    for i, name in enumerate(names):
        if only is not None and name not in only:
            continue
        swatch = f'<span class="swatch" style="background:{color(i)}"></span>'
        text = escape(name)
        items.append(f'<li>{swatch}<a href="{escape(links[name])}">{text}</a></li>' if name in links
                     else f"<li>{swatch}{text}</li>")
    return mark_safe('<ul class="chart-legend">' + "".join(items) + "</ul>")
