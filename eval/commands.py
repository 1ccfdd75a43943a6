"""``kenning eval …``: run a collection, compare with a baseline, tune fusion. Parse, call, print.

Kept cheap to import (the main CLI mounts it on every start): the harness, ir-measures and
matplotlib are imported inside the commands that need them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import typer
from kenning.commands import support as ui
from kenning.commands.support import CONTEXT, emit_json, one_line_errors
from kenning.errors import InvalidInput

eval_app = typer.Typer(
    name="eval",
    help="Measure retrieval on BEIR-format collections: metrics per mode, regression gate, fusion tuning.",
    epilog="Example: kenning eval run builtin",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
)

METRIC_COLUMNS = ("nDCG@10", "R@10", "R@100", "MRR@10")
INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C (128 + SIGINT), as import and index exit


_one_line_errors = one_line_errors("eval")


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"{what} {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{what} {path}: cannot read it ({exc})") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{what} {path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("modes"), dict):
        raise InvalidInput(f"{what} {path}: not an eval report (no 'modes' object); make one with `kenning eval run --out`")
    damage = _damage(data)
    if damage:
        raise InvalidInput(f"{what} {path}: damaged eval report ({damage}); make it again with `kenning eval run --out` "
                           "(a committed baseline: `kenning eval record-baselines`, or restore it from git)")
    return data


def _damage(report: Mapping) -> str | None:
    """What in a report's shape the comparison could not read (a metric that is not a number, a mode
    that is not an object), or None. A hand-edited or truncated-then-patched file is refused in one
    line instead of failing half-way through a comparison."""
    from .comparison import LATENCY_KEYS

    if "config" in report and not isinstance(report["config"], (dict, type(None))):
        return "'config' is not an object"
    model_id = (report.get("config") or {}).get("model_id")
    if model_id is not None and not isinstance(model_id, str):
        return "config 'model_id' is not text"
    for mode, row in report["modes"].items():
        if not isinstance(row, dict):
            return f"mode {mode!r} is not an object"
        for metric in (*METRIC_COLUMNS, *LATENCY_KEYS):
            value = row.get(metric)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or value != value):
                return f"{mode} {metric} is {value!r}, not a number"
    return None


def _write_json(path: Path, payload: Mapping) -> None:
    try:
        path.write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None


def _fmt(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _report_table(report: Mapping):
    from rich import box
    from rich.table import Table

    rows = report["modes"]
    answerable = next((row.get("queries") for row in rows.values()), None)
    unanswerable = report["queries"] - answerable if answerable is not None else 0
    counted = f"{report['queries']} queries"
    if unanswerable:
        counted += f" ({answerable} answerable, {unanswerable} unanswerable)"
    title = f"{report['dataset']}: {counted}, {report['documents']} documents"
    if report.get("group_sep"):
        title += f", grouped by '{report['group_sep']}'"
    if report.get("depth") is not None:  # --depth: how deep each mode ranked (R@100 needs 100)
        title += f", {report['depth']} hits ranked per query"
    table = Table(title=title + "; metrics over the answerable queries", box=box.SIMPLE_HEAD)
    table.add_column("mode", style="bold")
    metrics = [m for m in METRIC_COLUMNS if any(m in row for row in rows.values())]  # R@100 needs --depth >= 100
    for name in metrics:
        table.add_column(name, justify="right")
    for name in ("p50 ms", "p95 ms", "answerable"):
        table.add_column(name, justify="right")
    for mode, row in rows.items():
        table.add_row(mode, *(_fmt(row.get(m)) for m in metrics), _fmt(row.get("latency_ms_p50"), 1),
                      _fmt(row.get("latency_ms_p95"), 1), str(row.get("queries", "-")))
    return table


def _what_ran(report: Mapping) -> str:
    """One paragraph naming every setting behind the figures."""
    c = report.get("config") or {}
    if not c:
        return ""
    w = c.get("weights", {})
    parts = [
        f"tokenizer: {c['tokenizer']['name']} (v{c['tokenizer']['version']}, {c['tokenizer']['fingerprint']})"
        if "tokenizer" in c else "",
        f"bm25: k1 {c.get('bm25_k1')}, b {c.get('bm25_b')}, k3 {c.get('bm25_k3')}, idf {c.get('bm25_idf')}",
        f"query spelling: {c['query_spelling']}" if "query_spelling" in c else "",
        f"hybrid fusion: {c.get('fusion')}"
        + (f" (alpha {c.get('evidence_alpha')}, cos floor {c.get('evidence_cos_floor')}, power {c.get('evidence_power')}, "
           f"bm25 share {c.get('evidence_bm25_share')}"
           + (f", a text holding one of several query terms x{c['evidence_lone_term_weight']}"
              if "evidence_lone_term_weight" in c else "")
           + (f", a text holding < {c['evidence_partial_coverage']} of the query at cosine < {c['evidence_far_cosine']} "
              f"x (cosine/{c['evidence_far_cosine']})^power" if "evidence_far_cosine" in c else "")
           + (f", bm25 leg with feedback {c['hybrid_bm25_feedback']}" if "hybrid_bm25_feedback" in c else "")
           + (f", vector leg with feedback {c['hybrid_vector_feedback']}" if "hybrid_vector_feedback" in c else "") + ")"
           if c.get("fusion") == "evidence" else ""),
        f"rrf ({'hybrid with fusion rrf' if c.get('fusion') == 'evidence' else 'hybrid'}): k {c.get('rrf_k')}, "
        f"weights keyword {w.get('keyword')} / bm25 {w.get('bm25')} / vector {w.get('vector')}",
        f"leg depth {c.get('leg_depth')}",
        f"lexical sums: {c['lexical_sums']}" if "lexical_sums" in c else "",
    ]
    if "model_id" in c:
        parts.append(f"model {c['model_id']}, vector no-match floor {c.get('vector_floor_applied')}"
                     + (_corpus_encoded(c["long_encodes"]) if "long_encodes" in c else "")
                     + (f" ({c['vector_text']})" if "vector_text" in c else ""))
    if "rank_bm25" in c:
        r = c["rank_bm25"]
        parts.append(f"rank-bm25 reference: {r['class']}, k1 {r['k1']}, b {r['b']}, epsilon {r['epsilon']}, "
                     f"tokenizer {r['tokenizer']}, {r['statistics']}")
    for key in sorted(k for k in c if k.startswith("label")):
        parts.append(f"{key} {c[key]}")
    return "what ran: " + "; ".join(p for p in parts if p)


def _corpus_encoded(ran: str) -> str:
    from .harness import CACHE_ONLY

    return f", corpus: {ran}" if ran == CACHE_ONLY else f", corpus encoded on {ran}"


def _unanswerable_table(report: Mapping):
    """Per mode, and per category when the collection names them (where the category table sends
    the categories without an answerable query), plus ``all`` when that is more than one category."""
    from rich import box
    from rich.table import Table

    rows = {m: r for m, r in report["modes"].items() if r.get("unanswerable")}
    if not rows:
        return None
    categories = _categories(report, lambda block: "unanswerable" in block)
    table = Table(title="unanswerable queries (no relevant document): lower 'top hit high' is better",
                  box=box.SIMPLE_HEAD)
    for name in ("mode", *(["category"] if categories else []), "queries", "came back empty", "top hit high"):
        table.add_column(name, justify="left" if name in ("mode", "category") else "right")
    for mode, row in rows.items():
        by_category = row.get("by_category", {})
        parts = [(c, by_category[c]["unanswerable"]) for c in categories if "unanswerable" in by_category.get(c, {})]
        if not categories:
            parts = [(None, row["unanswerable"])]
        elif len(parts) > 1 or sum(block["queries"] for _, block in parts) != row["unanswerable"]["queries"]:
            parts.append(("all", row["unanswerable"]))
        for category, block in parts:
            high = block.get("top_high")
            table.add_row(mode, *([category] if categories else []), str(block["queries"]), f"{block['empty']:.1%}",
                          "-" if high is None else f"{high:.1%}")
    return table


def _categories(report: Mapping, holds) -> list[str]:
    """The categories (in report order) whose block ``holds(block)`` in any mode."""
    out: list[str] = []
    for row in report["modes"].values():
        out += [c for c, block in row.get("by_category", {}).items() if holds(block) and c not in out]
    return out


def _reliability_table(report: Mapping):
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    rows = {m: r["reliability"] for m, r in report["modes"].items() if r.get("reliability")}
    if not rows:
        return None
    # short headers, explained by the legend below it, so the table fits 80 columns; the
    # unanswerable queries' top hit is in their own table
    table = Table(title="relevance labels of the answerable queries' top-10 hits", box=box.SIMPLE_HEAD, pad_edge=False,
                  collapse_padding=True)
    table.add_column("mode", style="bold", no_wrap=True)
    for label in ("high", "medium", "low"):
        table.add_column(label, justify="right")
        table.add_column("prec", justify="right")
    table.add_column("top high", justify="right")
    for mode, rel in rows.items():
        cells = []
        for label in ("high", "medium", "low"):
            cells += [_pct(rel[label]["share"]), _pct(rel[label]["precision"])]
        table.add_row(mode, *cells, _pct(rel.get("top_high")))
    # the legend below it, not its caption: a caption wider than the columns widens the table with it
    legend = Text("high / medium / low: each label's share of the hits; prec: the share of those judged relevant; "
                  "top high: the share of queries whose top hit is high")
    return Group(table, legend)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


UNSTORABLE_SHOWN = 5  # unstorable documents the notes name one by one


def _notes(report: Mapping) -> list:
    """Degraded modes and data problems, one line each."""
    from rich.text import Text

    from kenning.store.ids import shown

    lines = []
    for mode, row in report["modes"].items():
        if row.get("degraded"):
            lines.append(Text(f"{mode} ran without the semantic leg ({row['degraded']}); "
                              f"legs run: {', '.join(row.get('legs_run', []))}", style="yellow"))
    if report.get("limit_queries"):
        lines.append(f"only the first {report['limit_queries']} queries were run (--limit-queries)")
    if report.get("skipped_documents"):
        reasons = report.get("skipped_reasons") or {"no text": report["skipped_documents"]}
        refused = reasons.get("refused by the store", 0)
        line = f"{report['skipped_documents']} document(s) without text were not indexed"
        if refused:
            empty = f"{reasons['no text']} without text, " if reasons.get("no text") else ""
            line = f"{report['skipped_documents']} document(s) were not indexed ({empty}{refused} the store cannot keep)"
        if report.get("queries_judged_relevant_to_skipped"):
            line += (f"; {report['queries_judged_relevant_to_skipped']} query(ies) have one judged relevant, which "
                     "no mode can return (their recall cannot reach 1)")
        lines.append(line)
        listed = report.get("unstorable_documents", [])
        for doc in listed[:UNSTORABLE_SHOWN]:
            lines.append(Text(f"  {doc['where']}: _id {shown(doc['_id'])} not indexed: {doc['why']}"))
        more = refused - min(len(listed), UNSTORABLE_SHOWN)
        if more > 0:
            lines.append(f"  and {more} more (--json lists the first {len(listed)})")
    if report.get("other_split_queries"):
        lines.append(f"{report['other_split_queries']} query(ies) of queries.jsonl that "
                     f"{report.get('qrels_file', 'qrels/test.tsv')} does not name (another split's) were not run")
    if report.get("relevant_outside_group"):
        lines.append(Text(f"{report['relevant_outside_group']} query(ies) have a relevant document outside their "
                          f"--group-sep group, which they never search: their recall cannot reach 1", style="yellow"))
    if report.get("orphaned_queries"):
        lines.append(f"{report['orphaned_queries']} query(ies) whose every relevant document is missing from the "
                     "corpus were not run (neither answerable here nor known to be unanswerable)")
    if report.get("conflicting_judgments"):
        lines.append(Text(f"{report['conflicting_judgments']} (query, document) pair(s) are judged twice in the qrels "
                          "with different grades: the higher grade was kept", style="yellow"))
    return lines


def _category_table(report: Mapping, metric: str = "nDCG@10"):
    """The categories with an answerable query; None when there is none (a plain collection run
    with --foreign has only the foreign one), rather than a header over no rows."""
    from rich import box
    from rich.table import Table

    rows = report["modes"]
    answerable = _categories(report, lambda block: metric in block)
    if not answerable:
        return None
    others = [c for c in _categories(report, lambda block: True) if c not in answerable]
    title = f"{metric} by query category"
    if others:
        title += f" ({', '.join(others)}: no answerable query, see the unanswerable table)"
    table = Table(title=title, box=box.SIMPLE_HEAD)
    table.add_column("category", style="bold")
    table.add_column("answerable", justify="right")
    for mode in rows:
        table.add_column(mode, justify="right")
    for cat in answerable:
        cells = [rows[m].get("by_category", {}).get(cat, {}) for m in rows]
        first = next(c for c in cells if metric in c)
        count = first.get("queries", 0) - first.get("unanswerable", {}).get("queries", 0)
        table.add_row(cat, str(count), *(_fmt(c.get(metric)) if metric in c else "n/a" for c in cells))
    return table


def _scratch_server(ctx: typer.Context, store_url: str | None) -> str | None:
    """The PostgreSQL server ``eval run`` loads its scratch schema on: its own ``--store``, else the
    root's (``kenning --store postgresql://... eval run``, which a user reads as the same option). A
    store directory given to the root is never read or written by an evaluation (the corpus goes into
    a throwaway store), so it is named as unused rather than silently dropped."""
    if store_url is None:
        root = ctx.find_root().obj or {}
        given = root.get("store_dir") if isinstance(root, dict) else None
        if given is not None and str(given).startswith(("postgresql://", "postgres://")):
            return str(given)
        if given is not None:
            ui.note(f"--store {given} is not used: an evaluation loads the collection into a throwaway store "
                    "(only a postgresql:// URL is used, for a scratch schema on that server)")
        return None
    if not store_url.startswith(("postgresql://", "postgres://")):
        raise InvalidInput("--store takes a postgresql:// URL (the SQLite default needs no option)")
    return store_url


@eval_app.command("run")
@_one_line_errors
def run_command(
    ctx: typer.Context,
    collection: str = typer.Argument(..., help="A BEIR folder (corpus.jsonl, queries.jsonl, qrels.tsv or BEIR's qrels/test.tsv), or 'builtin' / 'memval' / 'memval2' / 'memval3' (shipped memory-style sets)."),
    modes: Optional[str] = typer.Option(
        None, "--modes", help="Comma-separated modes (keyword,bm25,semantic,hybrid). Default: every mode that can run here."),
    group_sep: Optional[str] = typer.Option(
        None, "--group-sep", help="Restrict each query to documents whose id has the same prefix before this separator."),
    reference: list[str] = typer.Option(
        [], "--reference", help="Add a reference row computed outside the engine: rank-bm25."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON instead of tables."),
    out_path: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON report to this file."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Draw metrics and latency per mode into this PNG."),
    limit_queries: Optional[int] = typer.Option(None, "--limit-queries", help="Evaluate only the first N queries."),
    depth: int = typer.Option(100, "--depth", help="Hits ranked per query (R@100 is reported only at 100 or more)."),
    baseline: Optional[str] = typer.Option(
        None, "--baseline", metavar="FILE|none",
        help="Compare with this report and print a verdict (default: the committed eval/baselines/<collection>.json). "
             "A run whose settings differ from the baseline's (collection, document or query count, contents, --group-sep, "
             "--depth, --limit-queries, model) gets no verdict, only a note naming the difference. The exit code "
             "is 0 either way (`kenning eval compare` exits 1 on a regression), except 1 when, without --modes, "
             "semantic and hybrid could not run on an installed encoder and the baseline has them."),
    split: Optional[str] = typer.Option(
        None, "--split", help="Judge by BEIR's qrels/SPLIT.tsv (such as dev) instead of qrels.tsv or qrels/test.tsv; "
                              "queries it does not name are another split's and are not run."),
    foreign: Optional[str] = typer.Option(
        None, "--foreign", help="Also run this other collection's queries, as unanswerable ones (off-topic questions)."),
    store_url: Optional[str] = typer.Option(
        None, "--store", metavar="URL",
        help="Load the collection into a scratch schema on this PostgreSQL server (dropped afterwards) instead "
             "of a temporary SQLite store: the backend parity check."),
) -> None:
    """Evaluate every mode on a collection and print nDCG@10, R@10, R@100, MRR@10 and latency,
    the unanswerable queries' behaviour, the relevance labels' reliability, and every setting that ran.

    KENNING_BULK_RUNTIME=openvino (with kenning[openvino]) encodes the corpus on OpenVINO bf16, about
    three times faster on a CPU with bfloat16 units; "what ran" says which runtime encoded it. Vectors
    the shared embedding cache holds are reused whichever runtime made them (KENNING_CACHE_DIR apart
    to compare runtimes).

    The corpus is loaded into a throwaway store and queried through the same engine as `kenning search`.
    The output paths and the baseline are checked before the run, so a typo costs no results.

    Examples:

        kenning eval run builtin

        kenning eval run ../shared/eval-data/locomo-dev --group-sep : --modes bm25,hybrid --out locomo.json

        kenning eval run ../shared/eval-data/scifact-train --reference rank-bm25 --plot scifact.png

        kenning eval run ../shared/eval-data/med --foreign ../shared/eval-data/cranfield

        kenning eval run ../shared/eval-data/scifact-train --store postgresql://kenning@db.internal/kenning
    """
    from .harness import Interrupted, run_eval

    store_url = _scratch_server(ctx, store_url)
    _check_writable(out_path, "--out")
    _check_writable(plot, "--plot")
    if plot is not None:
        from .plot import check_can_plot

        check_can_plot(plot)
    try:
        data = _load(collection, split)
        base = _baseline(baseline, data.name)
        report = run_eval(data, modes=modes, group_sep=group_sep, depth=depth, progress=True,
                          reference=reference, limit_queries=limit_queries, foreign=foreign, store_url=store_url)
    except KeyboardInterrupt as exc:  # exit 130 as import and index do, but never in silence
        from kenning.retrieval.embedding_cache import default_cache_path

        during = exc.during if isinstance(exc, Interrupted) else None
        kept = (f"; the corpus vectors encoded so far are kept in {default_cache_path()}, so a re-run is faster"
                if isinstance(exc, Interrupted) and exc.vectors_kept else "")
        ui.err.print(f"interrupted while {during or 'loading ' + collection}: no report was made{kept}", soft_wrap=True)
        raise typer.Exit(INTERRUPTED) from None
    if out_path is not None:
        _write_json(out_path, report)
    if plot is not None:
        from .plot import plot_report

        plot_report(report, plot)
    verdict = _baseline_verdict(report, base)
    not_run = report.get("not_run")
    if not_run:
        ui.note(f"{' and '.join(not_run['modes'])} did not run: {not_run['cause']} ({not_run['fix']}); "
                "--modes keyword,bm25 runs the lexical modes alone on purpose")
    # a gate must not pass on a lexical-only run the user never asked for, when an installed encoder failed;
    # an install without the extra runs lexically by design (the note says so), and passes on what it ran
    unjudged = verdict is not None and bool(verdict["unjudged"]) and (not_run or {}).get("reason") != "embeddings_absent"
    if as_json:
        emit_json(report if verdict is None else {**report, "baseline": verdict})
        if unjudged:
            raise typer.Exit(1)
        return
    ui.out.print(_report_table(report))
    for line in METRIC_MEANINGS:
        ui.out.print(line)
    excluded = _excluded_queries(report)
    if excluded:
        ui.out.print(excluded)
    for table in (_category_table(report), _unanswerable_table(report), _reliability_table(report)):
        if table is not None:
            ui.out.print(table)
    if _what_ran(report):
        ui.out.print(_what_ran(report))
    for line in _notes(report):
        ui.out.print(line)
    if verdict is not None:
        for line in _verdict_lines(verdict):
            ui.out.print(line)
    cache = _cache_line(report)
    if cache:
        ui.out.print(cache)
    for written in (out_path, plot):
        if written is not None:
            ui.out.print(f"wrote {written}")
    if unjudged:
        raise typer.Exit(1)


# one line each, printed under the table
METRIC_MEANINGS = (
    "nDCG@10  ranking quality of the top 10: 1 when every relevant memory comes first, best first",
    "R@10     recall: the share of a query's relevant memories found in the top 10 (R@100: top 100)",
    "MRR@10   1/rank of the first relevant hit in the top 10, averaged (1: always first; 0.5: second)",
    "p50/p95  milliseconds per query on this machine (median, 95th percentile): the engine alone, rank-only (no snippets, trust annotation or events)",
)
BASELINES = Path(__file__).parent / "baselines"


def _excluded_queries(report: Mapping) -> str | None:
    """Why the table scores fewer queries than the collection has: the rest have no answer on purpose."""
    scored = max((row.get("queries") or 0 for row in report["modes"].values()), default=0)
    left_out = report["queries"] - scored
    if left_out <= 0:
        return None
    return (f"The table scores the {scored} queries that have a relevant memory. The other {left_out} have none "
            "on purpose (unanswerable): there the right answer is an empty result or no hit labelled high, "
            "so they are counted in the unanswerable lines below, not in the metrics.")


def _check_writable(path: Path | None, option: str) -> None:
    """Fail before the run, not after it: an output path that cannot be written would lose the results."""
    if path is None:
        return
    if path.is_dir():
        raise InvalidInput(f"{option} {path}: is a folder; give a file name")
    folder = path.parent
    if not folder.is_dir():
        raise InvalidInput(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise InvalidInput(f"{option} {path}: not writable")


def _load(collection: str, split: str | None = None):
    """The collection, with one note on stderr for judgments it cannot use (the loader only counts them)."""
    from .datasets import load_dataset

    data = load_dataset(collection, split)
    if data.unknown_qrels:
        ui.note(f"{collection}/{data.qrels_file}: {data.unknown_qrels} judgment(s) name a query or document not in "
                "the collection; ignored")
    return data


def _baseline(choice: str | None, collection: str) -> tuple[Path, dict] | None:
    """The report to judge the run by - the file given, else the committed baseline of the collection
    of that name, if there is one - read before the run so a bad --baseline costs nothing."""
    if choice == "none":
        return None
    path = Path(choice) if choice else BASELINES / f"{collection}.json"
    if choice is None and not path.is_file():
        return None
    return path, _read_json(path, "baseline")


def _baseline_verdict(report: Mapping, baseline: tuple[Path, dict] | None) -> dict | None:
    """The comparison with the baseline, or None without one; ``differences`` lists the settings
    that make the two incomparable (then nothing is compared)."""
    if baseline is None:
        return None
    from .comparison import compare

    path, base = baseline
    result = compare(report, base, BASELINE_TOLERANCE)
    not_run = (report.get("not_run") or {}).get("modes", [])
    return {"path": str(path), "tolerance": BASELINE_TOLERANCE, "differences": result["differences"],
            "modes_compared": list(result["modes"]), "regressions": result["regressions"],
            "missing_modes": result["missing_modes"],
            # modes of the baseline this run of every mode could not run: not judged, and exit 1
            "unjudged": [m for m in result["missing_modes"] if m in not_run]}


BASELINE_TOLERANCE = 0.005


def _verdict_lines(verdict: Mapping) -> list[str]:
    where = verdict["path"]
    if verdict["differences"]:
        from .comparison import describe

        other = any(d["setting"] in ("documents", "collection contents") for d in verdict["differences"])
        foreign = _foreign_of(verdict["differences"])
        return [f"no verdict: this run's settings differ from the baseline {where}: "
                + "; ".join(describe(d) for d in verdict["differences"]),
                ("the baseline holds another collection of that name: " if other else
                 f"the baseline also ran {foreign}'s queries as unanswerable ones: add --foreign <{foreign}'s "
                 "folder, or its name if it is built in>; or " if foreign else
                 "to compare, run with the baseline's settings; or ")
                + "pass --baseline FILE (a report of a run like this one, from `kenning eval run --out`), "
                  "or --baseline none"]
    if not verdict["modes_compared"]:
        return [f"baseline {where}: no mode in common, nothing compared"]
    missing = f"; not in the report: {', '.join(verdict['unjudged'])}" if verdict["unjudged"] else ""
    if verdict["regressions"]:
        worst = min(verdict["regressions"], key=lambda r: r["diff"])
        return [f"verdict: WORSE than the baseline {where}: {len(verdict['regressions'])} metric(s) dropped by more "
                f"than {verdict['tolerance']}, worst {worst['mode']} {worst['metric']} {worst['diff']:+.4f}{missing}"]
    compared = ", ".join(verdict["modes_compared"])
    if missing:  # parity in the modes that ran says nothing of those meant to run that did not
        return [f"verdict: {compared} only, against the baseline {where}: no metric dropped by more than "
                f"{verdict['tolerance']}{missing}"]
    return [f"verdict: as good as the baseline {where} (no metric of {compared} dropped by more than {verdict['tolerance']})"]


def _foreign_of(differences: list[Mapping]) -> str | None:
    """The collection whose queries the baseline added (``--foreign``) when this run added none: its
    name reads "med+cranfield queries" (eval/datasets.py)."""
    for d in differences:
        here, there = str(d.get("report")), str(d.get("baseline"))
        if d["setting"] == "collection" and there.startswith(here + "+") and there.endswith(" queries"):
            return there[len(here) + 1 : -len(" queries")]
    return None


def _cache_line(report: Mapping) -> str | None:
    """Where the corpus embeddings were cached, when the vector leg ran."""
    if not any("vector" in row.get("legs_run", []) for row in report["modes"].values()):
        return None
    from kenning.retrieval.embedding_cache import default_cache_path

    return (f"embeddings of the corpus are cached in {default_cache_path()} so a re-run is fast "
            "(KENNING_CACHE_DIR moves it; deleting the file is safe)")


@eval_app.command("compare")
@_one_line_errors
def compare_command(
    report_path: Path = typer.Argument(..., metavar="REPORT", help="A report from `kenning eval run --out`."),
    baseline_path: Path = typer.Argument(..., metavar="BASELINE", help="The baseline report to hold it against."),
    tolerance: float = typer.Option(0.005, "--tolerance", help="Largest metric drop that is not a regression."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Show each mode's metric differences from a baseline; exit 1 when any drops by more than the tolerance.

    Latency differences are shown but never fail the comparison. Two reports of different collections
    or settings (document or query count, contents, --group-sep, --depth, --limit-queries, model), or with no
    mode in common, are not compared: the command names what differs and exits 2.

    Example:

        kenning eval compare scifact.json eval/baselines/scifact-train.json --tolerance 0.005
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from .comparison import compare, describe

    result = compare(_read_json(report_path, "report"), _read_json(baseline_path, "baseline"), tolerance)
    if result["differences"]:
        raise InvalidInput(f"{report_path} and {baseline_path} are not comparable: "
                           + "; ".join(describe(d, "in the report") for d in result["differences"])
                           + " (compare two runs of one collection with the same settings)")
    if not result["modes"]:
        # nothing was diffed, so "no regression" (exit 0) would pass a gate on no evidence at all
        report_modes = ", ".join(_read_json(report_path, "report")["modes"]) or "none"
        raise InvalidInput(f"{report_path} and {baseline_path} have no mode in common (the report: {report_modes}; "
                           f"the baseline: {', '.join(result['missing_modes']) or 'none'}); nothing compared "
                           "(run the baseline's modes with --modes)")
    if as_json:
        emit_json(result)
    else:
        table = Table(title=f"{result['dataset']} vs baseline {result['baseline_dataset']} (tolerance {tolerance})",
                      box=box.SIMPLE_HEAD)
        for name in ("mode", "metric", "baseline", "report", "diff"):
            table.add_column(name, justify="left" if name in ("mode", "metric") else "right")
        for mode, diffs in result["modes"].items():
            for metric, d in diffs.items():
                latency = metric.startswith("latency")
                bad = not latency and d["diff"] < -tolerance
                colour = "red" if bad else "green" if d["diff"] > tolerance and not latency else ""
                diff = Text(f"{d['diff']:+.4f}", style=colour)
                table.add_row(mode, metric, _fmt(d["baseline"], 4), _fmt(d["report"], 4), diff)
        ui.out.print(table)
        if result["missing_modes"]:
            ui.out.print(Text.assemble(("not in the report:", "yellow"), " ", ", ".join(result["missing_modes"])))
        if result["regressions"]:
            ui.out.print(Text(f"{len(result['regressions'])} regression(s) beyond {tolerance}", style="red"))
        else:
            ui.out.print(Text("no regression", style="green"))
    if result["regressions"]:
        raise typer.Exit(1)


def _describe_setting(s: Mapping) -> str:
    w = s["weights"]
    rrf = (f"rrf k {s['rrf_k']:g}, weights keyword {w.get('keyword', 1):g} / bm25 {w.get('bm25', 1):g} / "
           f"vector {w.get('vector', 1):g}")
    evidence = (f"evidence alpha {s['evidence_alpha']:g}, cos floor {s['evidence_cos_floor']:g}, "
                f"power {s['evidence_power']:g}")
    first, second = (evidence, rrf + " (hybrid with fusion rrf)") if s["fusion"] == "evidence" else (rrf, "")
    return f"bm25 k1 {s['bm25_k1']:g}, b {s['bm25_b']:g}; {first}" + (f"; {second}" if second else "")


@eval_app.command("tune")
@_one_line_errors
def tune_command(
    collections: list[str] = typer.Argument(..., help="One or more BEIR folders (development splits), 'builtin', 'memval', 'memval2' or 'memval3'."),
    group_sep: Optional[str] = typer.Option(
        None, "--group-sep", help="As for `eval run`; ids without the separator are not grouped."),
    metric: str = typer.Option("nDCG@10", "--metric", help="What to maximise (mean over the collections): nDCG@10, R@10 or MRR@10."),
    write_config: Optional[Path] = typer.Option(
        None, "--write-config", metavar="STORE", help="Write the best settings into this store's config."),
    limit_queries: Optional[int] = typer.Option(None, "--limit-queries", help="Tune on the first N queries of each collection."),
    split: Optional[str] = typer.Option(None, "--split", help="As for `eval run`: BEIR's qrels/SPLIT.tsv (such as dev)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full sweep as JSON."),
) -> None:
    """Sweep BM25 k1/b and, with the embeddings extra, both fusions' settings; print the setting with the
    best mean score and, per collection, how it compares with the defaults and with each single leg.

    Examples:

        kenning eval tune ../shared/eval-data/scifact-train

        kenning eval tune ../shared/eval-data/locomo-dev ../shared/eval-data/scifact-train --group-sep :

        kenning eval tune builtin --write-config ~/.kenning
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from .tuning import tune, write_config as persist

    if write_config is not None:  # before the run: a mistyped path must neither cost it nor start a new store
        from kenning.store.backend import exists

        if not exists(write_config.expanduser()):
            raise InvalidInput(f"--write-config {write_config}: no kenning store there; check the path "
                               "(`kenning info` names the default store)")
    result = tune([_load(c, split) for c in collections], group_sep=group_sep, metric=metric, progress=True,
                  limit_queries=limit_queries)
    if write_config is not None:
        result["written_to"] = str(write_config)
        persist(write_config, result["best"])
    if as_json:
        emit_json(result)
        return
    for label in ("default", "best"):
        ui.out.print(Text.assemble((label, "bold"), f": {_describe_setting(result[label])}; mean {metric} {result[label + '_score']:.4f}"))
    legs = list(next(iter(result["per_dataset"].values()))["legs"])
    table = Table(title=f"{metric} per collection" + ("" if result["semantic"] else " (lexical legs only: no embeddings)"),
                  box=box.SIMPLE_HEAD)
    for name in ("collection", *legs, "hybrid default", "hybrid tuned"):
        table.add_column(name, justify="left" if name == "collection" else "right")
    for name, figures in result["per_dataset"].items():
        table.add_row(name, *(_fmt(figures["legs"][leg][metric]) for leg in legs),
                      _fmt(figures["default"][metric]), _fmt(figures["best"][metric]))
    ui.out.print(table)
    if write_config is not None:
        ui.out.print(f"wrote the best settings into {write_config}")


@eval_app.command("record-baselines")
@_one_line_errors
def record_baselines_command(
    cases: Optional[list[str]] = typer.Argument(None, help="Gate cases to re-record (default: all of them)."),
    data: Optional[Path] = typer.Option(
        None, "--data", help="The eval-data folder (default: $KENNING_EVAL_DATA, else ../shared/eval-data)."),
) -> None:
    """Re-run the relevance gate's cases in every variant and write eval/baselines/<case>.json.

    Run it after a genuine improvement, so that the gate (tests/test_relevance.py) holds the new
    figures from then on. Check the diff of the baselines before committing it.

    Examples:

        kenning eval record-baselines

        KENNING_EVAL_DATA=../shared/eval-data kenning eval record-baselines builtin med
    """
    from .gate import record

    for path in record(cases or None, data):
        ui.out.print(f"wrote {path}")
