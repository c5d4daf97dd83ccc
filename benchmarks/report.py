"""Render the results of ``run.py`` as Markdown (``RESULTS.md``).

Every figure comes from the one run being rendered. A measurement that failed or was not taken
prints as "not measured" (with the reason where known), never as zero. Ratios are
sessionquery's figure divided by the comparator's, so for latencies below 1 means sessionquery
is faster, and for build throughput above 1 means sessionquery builds faster.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
"""The repository's top folder."""

TIMES = "\u00d7"
"""The multiplication sign printed after ratios."""

NOT_MEASURED = "not measured"

CLASSES = ("rare word", "common word", "two-word phrase", "filtered")

TARGETS_MS = {
    "rare word": (20.0, 100.0),
    "two-word phrase": (20.0, 100.0),
    "common word": (300.0, 300.0),
}


def _ms(value: float | None) -> str:
    if value is None:
        return NOT_MEASURED
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 10:
        return f"{value:.0f} ms"
    return f"{value:.2f} ms"


def _mb(kb: int | None) -> str:
    return NOT_MEASURED if kb is None else f"{kb / 1024:.0f} MB"


def _size(n: int | None) -> str:
    if n is None:
        return NOT_MEASURED
    return f"{n / 2**20:.1f} MB"


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or theirs <= 0:
        return NOT_MEASURED
    return f"{ours / theirs:.2f}{TIMES}"


def _ok(outcome: dict[str, Any] | None) -> dict[str, Any] | None:
    if not outcome or not outcome.get("ok"):
        return None
    result: dict[str, Any] = outcome["result"]
    return result


def _why(outcome: dict[str, Any] | None) -> str:
    if not outcome:
        return NOT_MEASURED
    return f"{NOT_MEASURED} ({outcome.get('error', 'no result')})"


def _class(outcome: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    result = _ok(outcome)
    if result is None:
        return None
    found: dict[str, Any] | None = result["classes"].get(name)
    return found


def _rate(corpus: dict[str, Any], outcome: dict[str, Any] | None) -> float | None:
    result = _ok(outcome)
    if result is None or not result["seconds"]:
        return None
    return float(corpus["manifest"]["events"]) / float(result["seconds"])


def _machine(m: dict[str, Any]) -> list[str]:
    load = ", ".join(f"{x:.1f}" for x in m["load_before"])
    after = ", ".join(f"{x:.1f}" for x in m.get("load_after", ()))
    return [
        "| | |",
        "|---|---|",
        f"| date | {m['date']} |",
        f"| machine | {m['platform']}; {m['cpu']}; {m['cores']} cores; {m['memory']} RAM |",
        f"| Python | {m['python']} |",
        f"| SQLite | {m['sqlite']} |",
        f"| Tantivy (PyPI `tantivy`) | {m['tantivy']} |",
        f"| rg | {m['rg']} |",
        f"| load average (1/5/15 min) | before {load}; after {after} |",
        f"| total run time | {m.get('total_s', 0) / 60:.1f} min |",
        "",
    ]


def _corpora(results: dict[str, Any]) -> list[str]:
    lines = [
        "| corpus | sessions | events | documents | JSONL bytes | forks | subagents "
        "| compactions | biggest session | generated in |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for corpus in [*results["corpora"], results["rule"]]:
        m = corpus["manifest"]
        big = f"{m['big_session_events']:,} events" if m["big_session"] else "—"
        lines.append(
            f"| {corpus['label']} | {m['sessions']:,} | {m['events']:,} | {m['documents']:,} "
            f"| {_size(m['bytes'])} | {m['forks']} | {m['subagents']} | {m['compactions']} "
            f"| {big} | {m['seconds']:.1f} s |"
        )
    return [*lines, ""]


def _build(corpus: dict[str, Any]) -> list[str]:
    builds = corpus["build"]
    ours = _rate(corpus, builds.get("sessionquery"))
    lines = [
        "| system | time | events/s | documents | index size | peak RSS "
        "| sessionquery ÷ system (events/s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, outcome in builds.items():
        result = _ok(outcome)
        if result is None:
            lines.append(f"| {name} | {_why(outcome)} | | | | | |")
            continue
        rate = _rate(corpus, outcome)
        ratio = "—" if name == "sessionquery" else _ratio(ours, rate)
        lines.append(
            f"| {name} | {result['seconds']:.1f} s | {rate:,.0f} | {result['documents']:,} "
            f"| {_size(result.get('bytes'))} | {_mb(outcome.get('maxrss_kb'))} | {ratio} |"
        )
    return [*lines, ""]


def _p(stats: dict[str, Any] | None) -> str:
    if stats is None:
        return NOT_MEASURED
    return f"{_ms(stats['p50'])} / {_ms(stats['p95'])}"


def _rss(name: str, outcome: dict[str, Any]) -> int | None:
    key = "children_maxrss_kb" if name == "rg" else "maxrss_kb"
    value = outcome.get(key)
    return None if value is None else int(value)


def _search(corpus: dict[str, Any]) -> list[str]:
    searches = corpus["search"]
    others = [name for name in searches if name != "sessionquery"]
    head = "| query | sessionquery p50 / p95 | " + " | ".join(
        f"{name} p50 / p95 | **÷ {name}**" for name in others
    )
    lines = [
        head + " | same top 20 as raw FTS5 |",
        "|---|---:|---:|" + "---:|---:|" * len(others) + "---|",
    ]
    lines[0] = lines[0].replace("| query |", "| query | matching documents |", 1)
    for name in CLASSES:
        ours = _class(searches["sessionquery"], name)
        raw_stats = _class(searches.get("raw FTS5"), name)
        matches = "—"
        if raw_stats is not None and "matches" in raw_stats:
            matches = f"{raw_stats['matches']:,}"
        row = f"| {name} | {matches} | {_p(ours)} |"
        for other in others:
            theirs = _class(searches[other], name)
            if theirs is None and _ok(searches[other]) is not None:
                row += " n/a | n/a |"
                continue
            ratio = _ratio(
                None if ours is None else float(ours["p50"]),
                None if theirs is None else float(theirs["p50"]),
            )
            row += f" {_p(theirs)} | **{ratio}** |"
        raw = _class(searches.get("raw FTS5"), name)
        same = "—"
        if ours is not None and raw is not None:
            same = "yes" if ours["top"] == raw["top"] else "**no**"
        lines.append(row + f" {same} |")
    lines.append("")
    rss = ", ".join(
        f"{name} {_mb(_rss(name, outcome))}" if _ok(outcome) else f"{name} {_why(outcome)}"
        for name, outcome in searches.items()
    )
    lines.append(f"Peak RSS of each search process: {rss}.")
    first = _ok(searches["sessionquery"])
    if first is not None:
        lines.append(
            f"First sessionquery search after opening the index (one full listing, no log "
            f"reads): {_ms(first['first_ms'])}."
        )
    return [*lines, ""]


def _exact(corpus: dict[str, Any]) -> list[str]:
    lines = ["| operation | cold | cached p50 / p95 | peak RSS |", "|---|---:|---:|---:|"]
    listing = _ok(corpus.get("listing"))
    if listing is not None:
        lines.append(
            f"| `list_sessions` ({listing['sessions']:,} sessions) | {_ms(listing['cold_ms'])} "
            f"| {_p(listing['cached'])} | {_mb(corpus['listing'].get('maxrss_kb'))} |"
        )
    elif "listing" in corpus:
        lines.append(f"| `list_sessions` | {_why(corpus.get('listing'))} | | |")
    reads = _ok(corpus.get("reads"))
    if reads is not None:
        size = f"{corpus['manifest']['big_session_events']:,}-event session"
        for name in ("read_event", "trace_event"):
            lines.append(
                f"| `{name}` ({size}) | {_ms(reads[name]['cold_ms'])} "
                f"| {_p(reads[name]['cached'])} | {_mb(corpus['reads'].get('maxrss_kb'))} |"
            )
    elif "reads" in corpus:
        lines.append(f"| `read_event` / `trace_event` | {_why(corpus.get('reads'))} | | |")
    inc = _ok(corpus.get("incremental"))
    if inc is not None:
        lines.append(
            f"| reconcile after 10 events appended to 1 of {corpus['manifest']['sessions']:,} "
            f"sessions | — | {_p(inc['reconcile'])} "
            f"| {_mb(corpus['incremental'].get('maxrss_kb'))} |"
        )
        lines.append(f"| … of which re-reading that session alone | — | {_p(inc['reread'])} | |")
        lines.append(f"| no-change reconcile | — | {_p(inc['nochange_update'])} | |")
    elif "incremental" in corpus:
        lines.append(f"| incremental reconcile | {_why(corpus.get('incremental'))} | | |")
    return [*lines, ""]


def _verdict(ok: bool | None) -> str:
    return NOT_MEASURED if ok is None else ("met" if ok else "**missed**")


def _targets(corpus: dict[str, Any]) -> list[str]:
    lines = [
        f"Targets of the issue, on the {corpus['label']} corpus:",
        "",
        "| target | measured | verdict |",
        "|---|---:|---|",
    ]
    ours = corpus["search"]["sessionquery"]
    for name, (p50_limit, p95_limit) in TARGETS_MS.items():
        stats = _class(ours, name)
        ok = None if stats is None else stats["p50"] <= p50_limit and stats["p95"] <= p95_limit
        lines.append(
            f"| {name}: p50 ≤ {_ms(p50_limit)}, p95 ≤ {_ms(p95_limit)} | {_p(stats)} "
            f"| {_verdict(ok)} |"
        )
    ours_rate = _rate(corpus, corpus["build"].get("sessionquery"))
    floor_rate = _rate(corpus, corpus["build"].get("raw FTS5"))
    ok = None
    if ours_rate is not None and floor_rate is not None:
        ok = ours_rate >= 0.7 * floor_rate
    lines.append(
        f"| full build ≥ 0.7 {TIMES} raw FTS5 events/s | {_ratio(ours_rate, floor_rate)} "
        f"| {_verdict(ok)} |"
    )
    inc = _ok(corpus.get("incremental"))
    if inc is not None:
        over = inc["reconcile"]["p50"] - inc["reread"]["p50"]
        lines.append(
            f"| one changed session reconciled in ≤ 50 ms + its re-read | "
            f"{_ms(inc['reconcile']['p50'])} = {_ms(inc['reread']['p50'])} re-read + "
            f"{_ms(over)} | {_verdict(over <= 50)} |"
        )
    reads = _ok(corpus.get("reads"))
    if reads is not None:
        cached = reads["read_event"]["cached"]["p50"]
        lines.append(f"| cached `read_event` ≤ 1 ms | {_ms(cached)} | {_verdict(cached <= 1.0)} |")
    rss = ours.get("maxrss_kb") if _ok(ours) else None
    lines.append(
        f"| peak RSS during search ≤ 300 MB | {_mb(rss)} "
        f"| {_verdict(None if rss is None else rss <= 300 * 1024)} |"
    )
    return [*lines, ""]


def _rule(rule: dict[str, Any]) -> list[str]:
    m = rule["manifest"]
    lines = [
        f"No-change `search_sessions` on a JSONL store of {m['sessions']:,} sessions / "
        f"{m['events']:,} events vs the same query on a raw FTS5 table of the same documents, "
        f"ranked the same way. Rule: median ≤ max(3 {TIMES} raw, raw + 10 ms).",
        "",
        "| query | sessionquery median | raw FTS5 median | limit | verdict |",
        "|---|---:|---:|---:|---|",
    ]
    for name in CLASSES:
        ours = _class(rule["search"]["sessionquery"], name)
        raw = _class(rule["search"]["raw FTS5"], name)
        if ours is None or raw is None:
            lines.append(f"| {name} | {_p(ours)} | {_p(raw)} | | {NOT_MEASURED} |")
            continue
        limit = max(3 * raw["p50"], raw["p50"] + 10)
        verdict = "pass" if ours["p50"] <= limit else "**FAIL**"
        lines.append(
            f"| {name} | {_ms(ours['p50'])} | {_ms(raw['p50'])} | {_ms(limit)} | {verdict} |"
        )
    return [*lines, ""]


def _profile(outcome: dict[str, Any] | None, label: str) -> list[str]:
    result = _ok(outcome)
    if result is None:
        return [f"Profile: {_why(outcome)}", ""]
    lines = [
        f"cProfile excerpts on the {label} corpus (top functions by own time).",
        "",
        "Full build:",
        "",
        "```",
        result["build"],
        "```",
        "",
    ]
    for name, text in result["search"].items():
        lines += [f"Five `search_sessions` calls, {name}:", "", "```", text, "```", ""]
    return lines


def render(results: dict[str, Any], notes: str) -> str:
    """The whole Markdown document."""
    quick = results["quick"]
    lines = [
        "# sessionquery benchmark results" + (" (quick smoke run)" if quick else ""),
        "",
        "Generated by `python benchmarks/run.py"
        + (" --quick" if quick else "")
        + "` in one run; every comparator was measured side by side on the same corpus and "
        f"machine. Ratios are sessionquery ÷ comparator: below 1{TIMES} sessionquery is faster "
        f"(latency), above 1{TIMES} it builds faster (events/s). Latencies are wall-clock "
        "milliseconds of the call as a user makes it (warm page cache, index already open, "
        "nothing changed since the previous call).",
        "",
        "## Machine",
        "",
        *_machine(results["machine"]),
        "## Corpora",
        "",
        *_corpora(results),
    ]
    for corpus in results["corpora"]:
        lines += [
            f"## {corpus['label']}",
            "",
            "### Full index build",
            "",
            *_build(corpus),
            "### No-change search latency (`search_sessions`, limit 20)",
            "",
            *_search(corpus),
            "### Exact reads and incremental reconciliation",
            "",
            *_exact(corpus),
        ]
    lines += ["## Targets", "", *_targets(results["corpora"][-1])]
    lines += ["## SPEC §11 rule", "", *_rule(results["rule"])]
    if notes:
        lines += [notes.strip(), ""]
    first = results["corpora"][0]
    lines += ["## Profile excerpts", "", *_profile(results.get("profile"), first["label"])]
    return "\n".join(lines).rstrip() + "\n"


def replace_section(path: Path, section: str) -> None:
    """Put ``section`` (Markdown starting with its ``## `` heading line) in place of the
    section of ``path`` with the same heading, up to the next ``## `` heading; append it when
    ``path`` has none (or does not exist)."""
    heading = section.split("\n", 1)[0]
    text = path.read_text() if path.exists() else ""
    start = text.find(heading + "\n")
    if start < 0:
        path.write_text(text.rstrip("\n") + "\n\n" + section)
        return
    end = text.find("\n## ", start + len(heading))
    rest = "" if end < 0 else text[end + 1 :]
    path.write_text(text[:start] + section.rstrip("\n") + "\n" + ("\n" + rest if rest else ""))


def source_tree(rev: str, into: Path) -> Path:
    """``rev``'s ``src/`` (``git archive`` of this repository) extracted under ``into``: what a
    before/after benchmark puts first on ``PYTHONPATH`` for the *before* side."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"
