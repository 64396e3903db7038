"""An inspection report rendered: the terminal summary (rich tables) and the self-contained HTML page, one card per
sample with an agree/disagree control whose readings export as ``labels.jsonl``. The page's stylesheet and script
are files of this package (``report.css``, ``report.js``), inlined into each page so that it stays one file."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

from verifier_service.tools.inspection.report import (
    FLAGS,
    LABELS_FILE,
    REPORT_FILE,
    RESULTS_FILE,
    SAMPLES_FILE,
    SLOWEST_SHOWN,
    SUMMARY_FILE,
    Sample,
    code_kinds,
    load_labels,
    reading_order,
    reward_histogram,
    sample_set_hash,
    summarize,
)


def summary_renderables(samples: list[Sample]) -> list:
    """Rich tables: reward distribution, outcome split, format x correctness, slowest, flags, INFRA_ERRORs."""
    from rich.table import Table

    summary = summarize(samples)
    n = max(len(samples), 1)
    out = []

    dist = Table(title="reward distribution", title_justify="left")
    for column in ("reward", "count", ""):
        dist.add_column(column, justify="right" if column == "count" else "left")
    counts = summary["reward_histogram"]
    peak = max([*counts, summary["no_reward"], 1])
    for i, count in enumerate(counts):
        label = f"[{i / len(counts):.1f}, {(i + 1) / len(counts):.1f}{']' if i == len(counts) - 1 else ')'}"
        dist.add_row(label, str(count), "█" * round(30 * count / peak))
    if summary["no_reward"]:
        dist.add_row("null", str(summary["no_reward"]), "█" * round(30 * summary["no_reward"] / peak),
                     style="bold red")
    out.append(dist)

    split = Table(title="malformed / well-formed wrong / correct", title_justify="left")
    for column in ("outcome", "count", "share"):
        split.add_column(column, justify="left" if column == "outcome" else "right")
    for name, count in summary["outcomes"].items():
        style = {"malformed": "yellow", "correct": "green", "no reward (INFRA_ERROR)": "bold red"}.get(name)
        split.add_row(name, str(count), f"{count / n:.0%}", style=style)
    out.append(split)

    cross = Table(title="format score x correctness score", title_justify="left")
    cross.add_column("format \\ correctness")
    buckets = ("0", "(0, 1)", "1")

    def bucket(value: float) -> str:
        return "0" if value <= 0 else "1" if value >= 1 else "(0, 1)"

    grid = Counter((bucket(s.result.get("format_score", 0.0)), bucket(s.result.get("correctness_score", 0.0)))
                   for s in samples if s.result.get("reward") is not None)
    for b in buckets:
        cross.add_column(b, justify="right")
    for f in buckets:
        cross.add_row(f, *(str(grid.get((f, c), 0)) for c in buckets))
    cross.add_section()
    cross.add_row("mean", f"format {summary['mean_format']:.3f}", f"correctness {summary['mean_correctness']:.3f}",
                  "" if summary["mean_reward"] is None else f"reward {summary['mean_reward']:.3f}")
    if summary["max_malformed_reward"] is not None and summary["min_wellformed_reward"] is not None:
        ok = summary["max_malformed_reward"] < summary["min_wellformed_reward"]
        cross.add_row("malformed < well-formed", "yes" if ok else "NO", f"max {summary['max_malformed_reward']:.2f}",
                      f"min {summary['min_wellformed_reward']:.2f}", style=None if ok else "bold red")
    out.append(cross)

    slow = Table(title=f"slowest {SLOWEST_SHOWN} samples", title_justify="left")
    for column in ("id", "verdict", "run s", "total s"):
        slow.add_column(column, justify="right" if column.endswith("s") and column != "id" else "left")
    for s in sorted(samples, key=lambda s: -(s.result.get("timings") or {}).get("total_s", 0.0))[:SLOWEST_SHOWN]:
        t = s.result.get("timings") or {}
        slow.add_row(s.id, s.result.get("verdict", ""), f"{t.get('run_s', 0.0):.2f}", f"{t.get('total_s', 0.0):.2f}")
    out.append(slow)

    flagged = Table(title=f"{summary['flagged_samples']} flagged sample(s): read these first", title_justify="left")
    for column in ("flag", "count", "ids"):
        flagged.add_column(column, justify="right" if column == "count" else "left")
    for name in FLAGS:
        ids = [s.id for s in samples if name in s.flags]
        if ids:
            flagged.add_row(FLAGS[name], str(len(ids)), ", ".join(ids[:6]) + (" ..." if len(ids) > 6 else ""),
                            style="bold red" if name == "infra_error" else None)
    if not summary["flagged_samples"]:
        flagged.add_row("none of the suspicious patterns", "0", "")
    out.append(flagged)

    if summary["infra_errors"]:
        infra = Table(title="INFRA_ERRORs (the sandbox failed: reward null, dropped by the trainer)",
                      title_justify="left", style="red")
        infra.add_column("id")
        infra.add_column("detail")
        for s in samples:
            if s.result.get("verdict") == "INFRA_ERROR":
                infra.add_row(s.id, (s.result.get("detail") or "")[:120])
        out.append(infra)
    return out


# ---- HTML -----------------------------------------------------------------------

def _lexer_name(sample: Sample, part: str) -> str:
    kind = sample.result.get("kind") or (sample.spec.get("kind") if isinstance(sample.spec, dict) else "")
    language = sample.spec.get("language") if isinstance(sample.spec, dict) else None
    if kind in ("stdio", "function_tests") and isinstance(language, str) and language:
        return language  # the language table's names are pygments lexer names (python, cpp, c, bash, java, ...)
    if kind == "sql":
        return "sql"
    if kind in code_kinds():
        return "python"
    if kind in ("json_schema", "tool_call"):
        return "json"
    return "text"


def _highlight_body(code: str, lexer_name: str) -> str:
    """Highlighted HTML (inline styles: pygments, which rich depends on), or escaped text."""
    try:
        from pygments import highlight as pyg_highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound
    except ImportError:
        return html.escape(code)
    try:
        lexer = get_lexer_by_name(lexer_name or "text", stripnl=False, ensurenl=False)
    except ClassNotFound:
        return html.escape(code)
    return pyg_highlight(code, lexer, HtmlFormatter(noclasses=True, nowrap=True, style="friendly"))


def highlight(code: str, lexer_name: str) -> str:
    return f'<pre class="code">{_highlight_body(code, lexer_name)}</pre>'


_FENCE = re.compile(r"```([\w+#-]*)[^\n]*\n(.*?)```", re.S)


def highlight_completion(text: str, code_lexer: str) -> str:
    """A completion with each fenced block highlighted in its language; unfenced code kinds as code."""
    if not _FENCE.search(text):
        return highlight(text, code_lexer if code_lexer != "text" else "text")
    parts, pos = [], 0
    for m in _FENCE.finditer(text):
        parts.append(html.escape(text[pos:m.start()]))
        parts.append(html.escape(m.group(0)[:m.start(2) - m.start()]))
        parts.append(_highlight_body(m.group(2), m.group(1).lower() or code_lexer))
        parts.append("```")
        pos = m.end()
    parts.append(html.escape(text[pos:]))
    return f'<pre class="code">{"".join(parts)}</pre>'


def reward_svg(samples: list[Sample], width: int = 560, height: int = 180) -> str:
    """An inline SVG bar chart of the reward distribution (10 bins over [0, 1], plus null)."""
    counts, missing = reward_histogram(samples)
    bars = [(f"{i / 10:.1f}", c, "#4a7bd0") for i, c in enumerate(counts)] + [("null", missing, "#c0392b")]
    peak = max([c for _, c, _ in bars] + [1])
    left, bottom, top = 30, 24, 14
    slot = (width - left - 10) / len(bars)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="reward distribution">',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#888"/>']
    for i, (label, count, color) in enumerate(bars):
        h = (height - bottom - top) * count / peak
        x = left + i * slot + 3
        y = height - bottom - h
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot - 6:.1f}" height="{h:.1f}" fill="{color}">'
                     f'<title>{label}: {count}</title></rect>')
        parts.append(f'<text x="{x + (slot - 6) / 2:.1f}" y="{y - 3:.1f}" font-size="10" '
                     f'text-anchor="middle">{count}</text>')
        parts.append(f'<text x="{x + (slot - 6) / 2:.1f}" y="{height - 8}" font-size="10" '
                     f'text-anchor="middle">{label}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _prompt_text(prompt: Any) -> str:
    if prompt is None:
        return "(no prompt given)"
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n\n".join(f"[{m.get('role', '?')}]\n{m.get('content', '')}" if isinstance(m, dict) else str(m)
                           for m in prompt)
    return json.dumps(prompt, indent=2)


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _card(index: int, s: Sample, label: dict | None) -> str:
    r = s.result
    verdict = r.get("verdict", "")
    reward = r.get("reward")
    reward_text = "null" if reward is None else f"{reward:.3f}"
    flags = "".join(f'<span class="flag" title="{_esc(FLAGS[f])}">{_esc(f)}</span>' for f in s.flags)
    tests = "".join(
        f'<tr class="v-{_esc(t.get("verdict", ""))}"><td>{_esc(t.get("name", ""))}</td><td>{_esc(t.get("verdict", ""))}'
        f'</td><td>{t.get("duration_s", 0.0):.3f}s</td><td>{_esc(t.get("detail", ""))}</td></tr>'
        for t in r.get("tests") or [])
    tests_html = (f'<table class="tests"><tr><th>test</th><th>verdict</th><th>time</th><th>detail</th></tr>'
                  f'{tests}</table>') if tests else '<p class="muted">no per-test results</p>'
    timings = r.get("timings") or {}
    agree = None if label is None else label.get("agree")
    comment = "" if label is None else label.get("comment", "")

    def tail(name: str) -> str:
        text = r.get(name) or ""
        return f'<pre class="tail">{_esc(text)}</pre>' if text else '<p class="muted">(empty)</p>'

    return f"""
<section class="card{' flagged' if s.flags else ''}" id="card-{index}" data-id="{_esc(s.id)}"
  data-verdict="{_esc(verdict)}" data-reward="{_esc(reward_text)}" data-flagged="{int(bool(s.flags))}">
  <header>
    <span class="sid">{_esc(s.id)}</span>
    <span class="verdict v-{_esc(verdict)}">{_esc(verdict)}</span>
    <span class="score">reward <b>{_esc(reward_text)}</b></span>
    <span class="score">format {r.get("format_score", 0.0):.2f}</span>
    <span class="score">correctness {r.get("correctness_score", 0.0):.2f}</span>
    <span class="score">tests {r.get("tests_passed", 0)}/{r.get("tests_total", 0)}</span>
    <span class="score">{timings.get("run_s", 0.0):.2f}s run</span>
    <span class="score">{_esc(r.get("kind", ""))}</span>
    {flags}
  </header>
  <p class="detail">{_esc(r.get("detail", ""))}</p>
  <div class="grid">
    <div><h4>prompt</h4><pre class="prompt">{_esc(_prompt_text(s.prompt))}</pre></div>
    <div><h4>completion</h4>{highlight_completion(s.completion, _lexer_name(s, "extracted"))}</div>
  </div>
  <h4>extracted answer / code</h4>
  {highlight(r.get("extracted") or "", _lexer_name(s, "extracted")) if r.get("extracted") else
   '<p class="muted">(nothing extracted)</p>'}
  <h4>tests</h4>{tests_html}
  <div class="grid"><div><h4>sandbox stdout (tail)</h4>{tail("stdout_tail")}</div>
  <div><h4>sandbox stderr (tail)</h4>{tail("stderr_tail")}</div></div>
  <details><summary>spec</summary><pre class="tail">{_esc(json.dumps(s.spec, indent=2))}</pre></details>
  <fieldset class="reading">
    <legend>your reading: is the verdict right?</legend>
    <label><input type="radio" name="r-{index}" value="agree"{" checked" if agree is True else ""}> agree</label>
    <label><input type="radio" name="r-{index}" value="disagree"{" checked" if agree is False else ""}>
      disagree</label>
    <label><input type="radio" name="r-{index}" value="unread"{" checked" if agree is None else ""}>
      not read</label>
    <textarea placeholder="comment (why you disagree, what the reward missed)">{_esc(comment)}</textarea>
  </fieldset>
</section>"""


def _asset(name: str) -> str:
    """A file of the report page that ships beside this module (package data)."""
    return (resources.files(__package__) / name).read_text(encoding="utf-8")


_STYLE = "\n" + _asset("report.css")   # the page's stylesheet, inlined (the report has no external resources)
_SCRIPT = "\n" + _asset("report.js")   # the reading and label export, inlined


def _json_for_script(obj: Any) -> str:
    return json.dumps(obj).replace("</", "<\\/").replace("<!--", "<\\!--")


def render_html(samples: list[Sample], labels: dict[str, dict], meta: dict[str, Any]) -> str:
    """The self-contained report page: no external resources, the labels pre-filled."""
    summary = summarize(samples)
    ordered = reading_order(samples)
    rows = "".join(f"<tr><td>{_esc(k)}</td><td>{v}</td></tr>" for k, v in summary["verdicts"].items())
    split = "".join(f"<tr><td>{_esc(k)}</td><td>{v}</td></tr>" for k, v in summary["outcomes"].items())
    flag_rows = "".join(f"<tr><td>{_esc(FLAGS[k])}</td><td>{v}</td></tr>" for k, v in summary["flags"].items())
    mean = "null" if summary["mean_reward"] is None else f"{summary['mean_reward']:.3f}"
    cards = "".join(_card(i, s, labels.get(s.id)) for i, s in enumerate(ordered))
    title = f"Reward inspection: {len(samples)} samples"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_STYLE}</style></head>
<body>
<h1>{_esc(title)}</h1>
<p class="muted">source {_esc(meta.get("source", ""))} &middot; verifier {_esc(meta.get("verifier", ""))} &middot;
sample set {_esc(meta.get("sample_set_hash", "")[:16])} &middot; built {_esc(meta.get("built_at", ""))}</p>
<div class="top">
  <div><h4>reward distribution (mean {mean})</h4>{reward_svg(samples)}</div>
  <div><h4>verdicts</h4><table>{rows}</table></div>
  <div><h4>outcome</h4><table>{split}</table>
    <p class="muted">mean format {summary["mean_format"]:.3f}, mean correctness {summary["mean_correctness"]:.3f}</p>
  </div>
  <div><h4>flags ({summary["flagged_samples"]} flagged sample(s), shown first)</h4>
    <table>{flag_rows or "<tr><td>none</td></tr>"}</table></div>
</div>
<div class="toolbar">
  <button id="export" type="button">export labels</button>
  <span id="progress"></span>
  <label><input type="checkbox" id="flagged-only"> flagged only</label>
  <label><input type="checkbox" id="unread-only"> unread only</label>
  <span class="muted">save the exported file as {_esc(LABELS_FILE)} in the report directory, or run
  <code>verifier-service inspect --import-labels labels.jsonl --report DIR</code></span>
</div>
{cards}
<script>const META = {_json_for_script(meta)}; const PREFILLED = {_json_for_script(labels)};</script>
<script>{_SCRIPT}</script>
</body></html>
"""


# ---- the report directory ---------------------------------------------------------

def write_report(report_dir: Path, samples: list[Sample], meta: dict[str, Any]) -> Path:
    """Writes samples, results, summary and the HTML page (with any labels already in the directory)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    meta = {**meta, "sample_set_hash": sample_set_hash(samples)}
    rows = []
    for s in samples:
        row = {"id": s.id, "completion": s.completion, "spec": s.spec}
        if s.prompt is not None:
            row["prompt"] = s.prompt
        rows.append(row)
    (report_dir / SAMPLES_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (report_dir / RESULTS_FILE).write_text("".join(json.dumps(s.result) + "\n" for s in samples), encoding="utf-8")
    summary = {**meta, **summarize(samples), "flagged": {s.id: s.flags for s in samples if s.flags}}
    (report_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return rebuild_html(report_dir, samples, meta)


def rebuild_html(report_dir: Path, samples: list[Sample], meta: dict[str, Any]) -> Path:
    labels = load_labels(report_dir / LABELS_FILE)
    known = {s.id for s in samples}
    labels = {k: v for k, v in labels.items() if k in known}
    path = report_dir / REPORT_FILE
    path.write_text(render_html(samples, labels, meta), encoding="utf-8")
    return path
