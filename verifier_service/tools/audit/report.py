"""The audit's files: ``audit.jsonl`` (one object per row), ``audit.json`` (the summary) and ``report.html``.

The page has the summary table (rows flagged per class and per probe) and one card per row, flagged rows
first: the reference's runs, then every probe with its verdict, reward and correctness, the ones that earned
something marked. Given an inspection report (``verifier-service inspect``), each card also lists the
inspected samples of that row's spec, with the reader's label, so the person who signs the inspection gate
off sees which of the samples they read come from rows the audit flagged.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from verifier_service.spec import canonical_json, normal_spec_json
from verifier_service.tools.audit.literals import prompt_text
from verifier_service.tools.audit.runner import RowAudit, flag_class

AUDIT_FILE = "audit.jsonl"
SUMMARY_FILE = "audit.json"
REPORT_FILE = "report.html"
CARDS_SHOWN = 300  # clean rows shown on the page at most (every flagged row is shown)

FLAG_CLASSES = {
    "reference_failed": "the reference solution does not pass",
    "reference_flaky": "the reference's verdict changed from run to run",
    "reference_slow": "the reference runs within 3x of the time limit",
    "trivial": "a trivial answer (empty, a stub, a constant) earned correctness",
    "leak": "a constant from the prompt earned correctness (the hidden tests hold what the prompt shows)",
    "hack": "a program of the hack corpus earned correctness",
    "infra_error": "the sandbox failed (no verdict): the row could not be judged",
}

_CSS = """body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:16px;background:#f4f5f7;
color:#1d1f23} h1{font-size:22px} table{border-collapse:collapse;font-size:13px;background:#fff}
td,th{padding:3px 8px;text-align:left;border-bottom:1px solid #eee;vertical-align:top}
.card{background:#fff;border-radius:8px;padding:10px 14px;margin:12px 0;border-left:6px solid #cfd4dc}
.card.flagged{border-left-color:#e67e22} .flag{background:#e67e22;color:#fff;border-radius:10px;padding:1px 8px;
font-size:12px;margin-right:4px;display:inline-block} .earned td{background:#fde2cf;font-weight:600}
.sid{font-weight:600;font-family:ui-monospace,monospace} .muted{color:#888;font-size:12px}
pre{background:#f7f7f9;border:1px solid #e3e3e8;border-radius:6px;padding:8px;overflow:auto;max-height:240px;
font-size:12px;white-space:pre-wrap;word-break:break-word}"""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _spec_key(spec: Any) -> str:
    try:
        return canonical_json(normal_spec_json(spec))
    except Exception:  # noqa: BLE001 - a spec the inspection report holds but the contract refuses: no match
        return canonical_json(spec)


def inspection_join(audits: list[RowAudit], inspection_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """{row id: the inspected samples of its spec (id, verdict, reward, label)} from an inspection report."""
    from verifier_service.tools import inspection

    samples = inspection.load_report(inspection_dir)
    labels = inspection.load_labels(inspection_dir / inspection.LABELS_FILE)
    by_spec: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in samples:
        label = labels.get(s.id) or {}
        by_spec[_spec_key(s.spec)].append({"id": s.id, "verdict": s.result.get("verdict"),
                                           "reward": s.result.get("reward"), "agree": label.get("agree"),
                                           "comment": label.get("comment", "")})
    return {a.id: by_spec[key] for a in audits if (key := _spec_key(a.spec)) in by_spec}


def write_files(directory: Path, audits: list[RowAudit], summary: dict[str, Any],
                joined: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"audit": directory / AUDIT_FILE, "summary": directory / SUMMARY_FILE, "report": directory / REPORT_FILE}
    with open(paths["audit"], "w", encoding="utf-8") as out:
        for a in audits:
            out.write(json.dumps(a.to_json(), ensure_ascii=False) + "\n")
    paths["summary"].write_text(json.dumps(summary, indent=2), encoding="utf-8")
    paths["report"].write_text(render_html(audits, summary, joined or {}), encoding="utf-8")
    return paths


def _probe_rows(audit: RowAudit, limit: float) -> str:
    rows = []
    for p in audit.probes:
        earned = (p.get("correctness") or 0.0) > limit
        rows.append(f'<tr class="{"earned" if earned else ""}"><td>{_esc(p["name"])}</td><td>{_esc(p["family"])}</td>'
                    f'<td>{_esc(p["verdict"])}</td><td>{_esc(p["reward"])}</td><td>{_esc(p["correctness"])}</td>'
                    f'<td>{_esc(p["tests"])}</td><td>{_esc(p["detail"][:160])}</td></tr>')
    return ("<table><tr><th>probe</th><th>family</th><th>verdict</th><th>reward</th><th>correctness</th>"
            "<th>tests</th><th>detail</th></tr>" + "".join(rows) + "</table>")


def _reference_html(audit: RowAudit) -> str:
    ref = audit.reference
    if ref is None:
        return '<p class="muted">no reference solution in this row</p>'
    runs = "".join(f"<tr><td>{i + 1}{' (beside a CPU hog)' if r['beside_cpu_hog'] else ''}</td>"
                   f"<td>{_esc(r['verdict'])}</td><td>{_esc(r['correctness'])}</td><td>{_esc(r['run_s'])}</td>"
                   f"<td>{_esc(r['detail'][:160])}</td></tr>" for i, r in enumerate(ref["runs"]))
    margin = "n/a" if ref["margin"] is None else f"{ref['margin']:.1f}x"
    return (f"<p>reference: slowest run {ref['slowest_run_s']}s of a {ref['limit_s']}s limit (margin {margin})</p>"
            "<table><tr><th>run</th><th>verdict</th><th>correctness</th><th>run s</th><th>detail</th></tr>"
            f"{runs}</table>")


def _joined_html(samples: list[dict[str, Any]]) -> str:
    if not samples:
        return ""
    rows = "".join(f"<tr><td>{_esc(s['id'])}</td><td>{_esc(s['verdict'])}</td><td>{_esc(s['reward'])}</td>"
                   f"<td>{'agree' if s['agree'] is True else 'disagree' if s['agree'] is False else 'not read'}</td>"
                   f"<td>{_esc(s['comment'])}</td></tr>" for s in samples)
    return ("<h4>inspected samples of this row (inspection report)</h4><table><tr><th>sample</th><th>verdict</th>"
            f"<th>reward</th><th>reading</th><th>comment</th></tr>{rows}</table>")


def _card(audit: RowAudit, limit: float, joined: list[dict[str, Any]]) -> str:
    flags = "".join(f'<span class="flag">{_esc(f)}</span>' for f in audit.flags)
    text = prompt_text(audit.prompt)
    return (f'<section class="card{" flagged" if audit.flags else ""}"><div><span class="sid">{_esc(audit.id)}</span> '
            f'<span class="muted">{_esc(audit.kind)}</span> {flags}</div>'
            f'<details><summary>prompt</summary><pre>{_esc(text[:4000])}</pre></details>'
            f'<details><summary>spec</summary><pre>{_esc(json.dumps(audit.spec, indent=2)[:6000])}</pre></details>'
            f"{_reference_html(audit)}{_joined_html(joined)}"
            f'<details{" open" if audit.flags else ""}><summary>{len(audit.probes)} probes</summary>'
            f"{_probe_rows(audit, limit)}</details></section>")


def render_html(audits: list[RowAudit], summary: dict[str, Any], joined: dict[str, list[dict[str, Any]]]) -> str:
    limit = summary.get("max_correctness", 0.0)
    classes = "".join(f"<tr><td>{_esc(c)}</td><td>{n}</td><td>{_esc(FLAG_CLASSES.get(c, ''))}</td></tr>"
                      for c, n in summary["rows_by_flag_class"].items()) or "<tr><td>none</td><td>0</td><td></td></tr>"
    probes = "".join(f"<tr><td>{_esc(p)}</td><td>{n}</td></tr>" for p, n in summary["rows_by_probe"].items())
    flagged = [a for a in audits if a.flags]
    clean = [a for a in audits if not a.flags][:CARDS_SHOWN]
    hidden = len(audits) - len(flagged) - len(clean)
    joined_rows = sum(bool(joined.get(a.id)) for a in flagged)
    cards = "".join(_card(a, limit, joined.get(a.id, [])) for a in flagged + clean)
    title = f"Reward audit: {summary['rows']} rows, {summary['flagged_rows']} flagged"
    meta = (f"dataset {_esc(summary.get('dataset', ''))} (sha256 {_esc(str(summary.get('dataset_sha256', ''))[:16])})"
            f" &middot; verifier {_esc(summary.get('verifier', ''))} &middot; {summary['verifications']} "
            f"verifications in {summary['seconds']}s &middot; a probe may earn correctness up to {limit} &middot; "
            f"built {_esc(summary.get('built_at', ''))}")
    joined_note = (f"<p>{joined_rows} flagged row(s) have samples in the inspection report "
                   f"{_esc(summary.get('inspection', ''))}.</p>") if summary.get("inspection") else ""
    shown = f"every flagged row is shown, then {len(clean)} clean row(s)" + (
        f"; {hidden} more clean rows are in {AUDIT_FILE}" if hidden else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title><style>{_CSS}</style></head><body>
<h1>{_esc(title)}</h1>
<p class="muted">{meta}</p>
<h4>rows flagged, by class</h4><table><tr><th>class</th><th>rows</th><th>meaning</th></tr>{classes}</table>
<h4>rows flagged, by probe</h4><table><tr><th>probe or check</th><th>rows</th></tr>
{probes or "<tr><td>none</td></tr>"}</table>
{joined_note}
<p class="muted">{shown}.</p>
{cards}
</body></html>
"""


def summary_table(summary: dict[str, Any]):
    """The terminal summary (rich)."""
    from rich.table import Table

    table = Table(title=f"audit: {summary['rows']} rows, {summary['flagged_rows']} flagged "
                        f"({summary['verifications']} verifications in {summary['seconds']}s)", title_justify="left")
    table.add_column("flag class")
    table.add_column("rows", justify="right")
    table.add_column("meaning")
    for name, count in summary["rows_by_flag_class"].items():
        table.add_row(name, str(count), FLAG_CLASSES.get(name, ""), style="bold red" if name == "infra_error" else None)
    if not summary["rows_by_flag_class"]:
        table.add_row("none", "0", "no probe earned correctness; every reference passed, steadily, with margin")
    return table


__all__ = ["AUDIT_FILE", "FLAG_CLASSES", "REPORT_FILE", "SUMMARY_FILE", "flag_class", "inspection_join",
           "render_html", "summary_table", "write_files"]
