"""The reference pages' generated parts, so the pages cannot drift from the code.

The parts are written into the committed pages (readable on the repository page as they are), each
between `<!-- generated: NAME -->` and `<!-- end generated: NAME -->`; `python docs/hooks/reference.py`
writes them again and `--check` lists the pages that are stale (tests/docs/test_reference_pages.py
runs it). As an MkDocs hook it fills the same parts at build time. The parts:

- `<!-- generated: cli -->`: every command's usage and options, from the click commands (through
  mkdocs-click's renderer, with `rushhour` as the program and 80 columns);

- `<!-- generated: scenario -->`: every section of the scenario file, from the pydantic models
  that validate it (`rushhour.scenarios.spec.model.Scenario` and the models it holds);
- `<!-- generated: exit-codes -->`: `rushhour.kernel.contract.ExitCode`, with each member's docstring;
- `<!-- generated: requests-columns -->` and `<!-- generated: results-files -->`: the columns of
  `requests.parquet` and the files of a results folder from `rushhour.kernel.contract`, with the meanings
  below; a column or file the contract has and this hook does not describe fails the strict
  build, and so does a description of one the contract no longer has;
- `<!-- generated: events -->`: every event type of `events.jsonl` with its fields, from the models
  of `rushhour.kernel.events`;
- `<!-- generated: comparison -->`, `capacity`, `ab`: those results documents, a table per part, from their models;
- `<!-- check: http-routes -->`: fails the build when a route of the reference server's routers
  is not named on the page.

`on_config` (and the CLI part) load every lazily registered command first so that none is missed.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import logging
import os
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

log = logging.getLogger("mkdocs.plugins.rushhour")
NOTES_FILE = Path(__file__).with_name("field_notes.yaml")
DOCS = Path(__file__).resolve().parents[1]
PART = re.compile(r"<!-- generated: (?P<name>[a-z-]+) -->\n(?:.*?\n)?<!-- end generated: (?P=name) -->"
                  r"|<!-- generated: (?P<bare>[a-z-]+) -->", re.DOTALL)

COLUMN_MEANINGS: dict[str, str] = {
    "intended_s": "when the schedule meant the request to be sent, seconds from the run's start",
    "sent_s": "when it got a pooled connection and went out (NaN if it never did)",
    "done_s": "when it ended: answer, error, the client's time-out or the run's end; set for every request started",
    "latency_ms": "done − intended: the latency a user felt, free of coordinated omission",
    "service_ms": "done − sent: the service time alone",
    "pool_wait_ms": "how long it waited for a free connection (the rest of sent − intended is the generator's own lag)",
    "fired": "how many times the generator started it: 0 never sent, more than 1 a duplicate (the run is then invalid)",
    "status": "the HTTP status; 0 when no answer came",
    "ok": "whether it succeeded (a 2xx answer the protocol accepts)",
    "error": "why it failed (`timeout`, `not sent`, an error code), empty when ok",
    "kind": "the request kind from the traffic model's mix (e.g. `short`, `document`)",
    "chars": "characters of text sent",
    "priority": "priority class (`paid`, `free`, `batch`, ...)",
    "mode": "`auto`, `fast` or `quality`",
    "model": "the model that answered, as the target named it",
    "cached": "answered from a cache",
    "degraded": "answered by a fallback (the fast pool or a stale cache entry)",
    "node": "the node that served it (reference server)",
    "tenant": "the tenant it was sent for",
    "phase": "the traffic model's phase at its intended time",
    "first_segment_ms": "long documents through the jobs API: time to the first finished segment (NaN otherwise)",
    "via": "`job` or `translate`: the API a document went through",
    "ttft_ms": "streaming: time to first token, from the intended send",
    "tpot_ms": "streaming: time per output token after the first",
    "itl_p50_ms": "streaming: the median gap between tokens within this answer",
    "itl_p99_ms": "streaming: the P99 gap between tokens within this answer",
    "itl_max_ms": "streaming: the longest gap between tokens within this answer",
    "output_tokens": "streaming: tokens received",
    "max_tokens": "tokens asked for",
    "input_tokens": "the prompt's tokens as the server counted them (openai-chat's usage), empty when unsaid",
    "arm": "`rushhour ab` only: `baseline` or `candidate`",
    "trial": "`rushhour ab` only: the interleaved trial the row belongs to",
}

FILE_MEANINGS: dict[str, str] = {
    "SCENARIO_FILE": "the scenario as run, every default and derived number filled in (loads again)",
    "SCHEDULE_FILE": "every planned arrival: offset, kind, chars, priority, mode, text id, tenant, phase, deadline",
    "REQUESTS_FILE": "one row per scheduled request (columns below)",
    "SERVER_METRICS_FILE": "per second and pool: nodes alive and ready, breakers open, queue depth, in flight, "
                           "batch size, execution provider, cache and shed counters",
    "TARGET_METRICS_FILE": "the target's own Prometheus metrics when `target.metrics_url` is set: time, metric, "
                           "labels, value",
    "EVENTS_FILE": "the timeline: run start with its environment, phases, faults, the target's own events (as `target_event`), "
                   "generator health, scraper errors, the leak audit, run end",
    "CHAOS_DIR": "one Chaos Toolkit journal and log per experiment (`<name>.journal.json`, `<name>.log`), and "
                 "`lease-keeper.log`: what the lease keepers of the run's faults did",
    "SUMMARY_FILE": "verdict, SLOs, latency percentiles, requests, throughput, cost, faults, generator health",
    "REPORT_HTML_FILE": "the report for people: one self-contained file that opens offline",
    "REPORT_MD_FILE": "the short report, for a pull-request comment",
    "JUNIT_FILE": "one test case per SLO, per fault recovery and for the leak audit, for CI",
    "CAPACITY_JSON_FILE": "`rushhour capacity`: the capacity, its bracket, the limiting SLO and every step",
    "CAPACITY_HTML_FILE": "`rushhour capacity`: the knee curve and each condition's utilisation and cost",
    "AB_JSON_FILE": "`rushhour ab`: the P99 ratio with its interval, error shares and the verdict",
    "AB_HTML_FILE": "`rushhour ab`: the side-by-side report",
    "AB_MD_FILE": "`rushhour ab`: the short side-by-side report",
}


def on_config(config: Any) -> Any:
    from rushhour.scenarios.cli.main import _register

    _register()
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = fill(markdown)
    if "<!-- check: http-routes -->" in markdown:
        _check_routes(markdown, page.file.src_path)
    return markdown


def fill(markdown: str) -> str:
    """The page with every generated part made afresh (a bare marker becomes a whole part)."""
    def part(match: re.Match[str]) -> str:
        name = match.group("name") or match.group("bare")
        make = _parts().get(name)
        if make is None:
            raise ValueError(f'No generated part is called "{name}" (known: {", ".join(sorted(_parts()))}).')
        return f"<!-- generated: {name} -->\n{make().strip()}\n<!-- end generated: {name} -->"

    return PART.sub(part, markdown)


def _parts() -> dict[str, Any]:
    return {"cli": _cli, "scenario": _scenario, "exit-codes": _exit_codes, "requests-columns": _columns,
            "results-files": _files, "summary": _summary, "events": _events,
            "comparison": lambda: _tables(importlib.import_module("rushhour.reports.variants_model").ComparisonDocument),
            "capacity": lambda: _tables(importlib.import_module("rushhour.reports.capacity.document_model").CapacityDocument),
            "ab": lambda: _tables(importlib.import_module("rushhour.reports.ab.document_model").AbDocument)}


def pages() -> list[Path]:
    """The documentation pages that hold a generated part."""
    return sorted(p for p in DOCS.rglob("*.md") if PART.search(p.read_text(encoding="utf-8")))


def stale_pages() -> list[Path]:
    return [p for p in pages() if fill(text := p.read_text(encoding="utf-8")) != text]


def main(argv: list[str]) -> int:
    """`python docs/hooks/reference.py [--check]`: write the generated parts into the pages, or
    (--check) list the stale ones and exit 1."""
    if argv[1:] == ["--check"]:
        stale = stale_pages()
        for page in stale:
            print(f"{page.relative_to(DOCS.parent)} is stale: run `python docs/hooks/reference.py`", file=sys.stderr)
        return 1 if stale else 0
    if argv[1:]:
        print("usage: python docs/hooks/reference.py [--check]", file=sys.stderr)
        return 2
    for page in pages():
        text = page.read_text(encoding="utf-8")
        if (fresh := fill(text)) != text:
            page.write_text(fresh, encoding="utf-8")
            print(f"wrote {page.relative_to(DOCS.parent)}")
    return 0


# --- the command line ----------------------------------------------------------------------------
def _cli() -> str:
    from mkdocs_click._docs import make_command_docs

    from rushhour.scenarios.cli.ab_calibrate import calibrate
    from rushhour.scenarios.cli.main import _register, cli

    _register()
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"  # click wraps help to the terminal: the page must not depend on it
    try:
        lines = list(make_command_docs(prog_name="rushhour", command=cli, depth=1, style="plain", list_subcommands=True,
                                       has_attr_list=True))
        # `ab calibrate` is read by `ab` itself (not a click group): its section goes at the end of ab's
        after_ab = next(i for i, line in enumerate(lines) if line.startswith("### rushhour ") and i > next(
            j for j, seen in enumerate(lines) if seen.startswith("### rushhour ab ")))
        lines[after_ab:after_ab] = [*make_command_docs(prog_name="rushhour ab calibrate", command=calibrate, depth=3,
                                                       style="plain", has_attr_list=True)]
    finally:
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns
    # headings name the whole command ("### rushhour run", anchor #rushhour-run) without the attribute
    # list mkdocs-click adds for it, which a repository page would show as text
    return "\n".join(re.sub(r" \{ #[^{}]*\}$", "", line.rstrip()) for line in lines).strip()


# --- the scenario file -----------------------------------------------------------------------
def _scenario() -> str:
    from rushhour.scenarios.spec.model import Scenario

    _check_notes()
    return _tables(Scenario)


def _tables(root: type[BaseModel]) -> str:
    """A table per model, from `root` down through the models its fields hold (the scenario, the results documents)."""
    sections: list[str] = []
    seen: set[type[BaseModel]] = set()
    queue: list[tuple[str, type[BaseModel]]] = [("(top level)", root)]
    while queue:
        where, model = queue.pop(0)
        if model in seen:
            continue
        seen.add(model)
        sections.append(_model_table(where, model, queue))
    return "\n\n".join(sections)


def _model_table(where: str, model: type[BaseModel], queue: list[tuple[str, type[BaseModel]]]) -> str:
    doc = inspect.cleandoc(model.__doc__ or "")
    notes = _field_notes()
    rows = ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
    for name, info in model.model_fields.items():
        for nested in _models_in(info.annotation):
            queue.append((f"{where}.{name}" if where != "(top level)" else name, nested))
        meaning = info.description or notes.get(f"{model.__name__}.{name}", "")
        rows.append(f"| `{name}` | {_type_name(info.annotation)}{_limits(info)} | {_default(info)} | {_cell(meaning)} |")
    title = f"### `{where}`" if where != "(top level)" else "### The top level"
    return f"{title}\n\n{_cell_block(doc)}\n\n" + "\n".join(rows)


def _field_notes() -> dict[str, str]:
    """Meanings for fields whose model has no description (docs/hooks/field_notes.yaml)."""
    return yaml.safe_load(NOTES_FILE.read_text(encoding="utf-8"))


def _check_notes() -> None:
    from rushhour.reports.summary.model import Summary
    from rushhour.scenarios.spec.model import Scenario

    fields: set[str] = set()
    queue: list[type[BaseModel]] = [Scenario, Summary]
    seen: set[type[BaseModel]] = set()
    while queue:
        model = queue.pop()
        if model not in seen:
            seen.add(model)
            fields |= {f"{model.__name__}.{name}" for name in model.model_fields}
            queue += [m for info in model.model_fields.values() for m in _models_in(info.annotation)]
    for key in sorted(set(_field_notes()) - fields):
        log.warning(f"docs/hooks/field_notes.yaml: {key} names no field of the scenario or summary models.")


def _limits(info: FieldInfo) -> str:
    """The field's bounds and pattern, as a reader of the YAML needs them."""
    words = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤", "min_length": "length ≥"}
    found = [f"{sign} {getattr(m, key)}" for m in info.metadata for key, sign in words.items() if hasattr(m, key)]
    found += [f"matching `{m.pattern}`" for m in info.metadata if getattr(m, "pattern", None)]
    return f" ({', '.join(found)})" if found else ""


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _type_name(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is Literal:
        return " \\| ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in get_args(annotation))
    if origin in (Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in get_args(annotation))
    if origin in (list, tuple):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        key, value = get_args(annotation)
        return f"mapping of {_type_name(key)} to {_type_name(value)}"
    if annotation is type(None):
        return "null"
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return f"mapping (`{annotation.__name__}`)"
    if annotation is typing.Any:
        return "any"
    name = getattr(annotation, "__name__", str(annotation))
    return {"str": "string", "float": "number", "int": "integer", "bool": "true/false"}.get(name, name)


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True, validated_data={})
    if isinstance(value, BaseModel):
        return "see below"
    if value is None:
        return "—"
    return f"`{json.dumps(value, default=str)}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _cell_block(text: str) -> str:
    return text.replace("\n- ", "\n\n- ") if text else ""


# --- exit codes and the results folder --------------------------------------------------------
def _exit_codes() -> str:
    from rushhour.kernel import contract

    docs = _attribute_docs(Path(contract.__file__), "ExitCode")
    rows = ["| code | name | meaning |", "| ---: | --- | --- |"]
    rows += [f"| {code.value} | `{code.name}` | {docs.get(code.name, '')} |" for code in contract.ExitCode]
    return "\n".join(rows)


def _attribute_docs(path: Path, class_name: str) -> dict[str, str]:
    """The docstring under each assignment in a class body (what Sphinx calls attribute docs)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    docs: dict[str, str] = {}
    for stmt, after in zip(cls.body, cls.body[1:]):
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
        if isinstance(target, ast.Name) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            docs[target.id] = " ".join(str(after.value.value).split())
    return docs


def _columns() -> str:
    from rushhour.kernel.contract import AB_COLUMNS, REQUEST_COLUMNS, STREAM_COLUMNS

    columns = {**REQUEST_COLUMNS, **AB_COLUMNS}
    _check_described("requests.parquet column", set(columns), set(COLUMN_MEANINGS))
    rows = ["| column | type | meaning |", "| --- | --- | --- |"]
    for name, dtype in columns.items():
        rows.append(f"| `{name}` | {dtype} | {COLUMN_MEANINGS.get(name, '')} |")
    streaming = ", ".join(f"`{c}`" for c in STREAM_COLUMNS)
    return "\n".join(rows) + f"\n\nThe streaming columns ({streaming}) are NaN for a target that does not stream."


def _files() -> str:
    from rushhour.kernel import contract

    names = {k: v for k, v in vars(contract).items() if k.endswith(("_FILE", "_DIR")) and isinstance(v, str)}
    _check_described("results file", set(names), set(FILE_MEANINGS))
    rows = ["| file | what it holds |", "| --- | --- |"]
    rows += [f"| `{value}{'/' if key.endswith('_DIR') else ''}` | {FILE_MEANINGS.get(key, '')} |" for key, value in names.items()]
    return "\n".join(rows)


def _summary() -> str:
    """summary.json's keys from rushhour.reports.summary.model.Summary, each with its meaning."""
    from rushhour.reports.summary import model as summary_model

    docs = _attribute_docs(Path(summary_model.__file__), "Summary")
    notes = _field_notes()
    rows = ["| key | type | meaning |", "| --- | --- | --- |"]
    for name, info in summary_model.Summary.model_fields.items():
        meaning = docs.get(name) or info.description or notes.get(f"Summary.{name}", "")
        if not meaning:
            log.warning(f"docs/hooks: summary.json key {name} has no meaning (docs/hooks/field_notes.yaml).")
        rows.append(f"| `{name}` | {_type_name(info.annotation)} | {_cell(meaning)} |")
    return "\n".join(rows)


def _events() -> str:
    """events.jsonl's event types from rushhour.kernel.events, each with its fields beyond the common ones."""
    from rushhour.kernel import events

    common = set(events.EVENT_MODELS[0].__mro__[1].model_fields)
    rows = ["| type | what it says | fields |", "| --- | --- | --- |"]
    for model in events.EVENT_MODELS:
        kinds = ", ".join(f"`{kind}`" for kind in get_args(model.model_fields["type"].annotation))
        fields = ", ".join(f"`{name}` ({_type_name(info.annotation)}{'' if info.is_required() else ', optional'})"
                           for name, info in model.model_fields.items()
                           if name != "type" and (name not in common or info.is_required()))
        rows.append(f"| {kinds} | {_cell(inspect.cleandoc(model.__doc__ or ''))} | {fields or '—'} |")
    return "\n".join(rows)


def _check_described(what: str, contract: set[str], described: set[str]) -> None:
    for name in sorted(contract - described):
        log.warning(f"docs/hooks/reference.py: the {what} {name} is in kernel/contract.py but not described here.")
    for name in sorted(described - contract):
        log.warning(f"docs/hooks/reference.py: the {what} {name} is described here but kernel/contract.py has no such name.")


# --- the reference server's routes --------------------------------------------------------------
def _check_routes(markdown: str, page: str) -> None:
    for module in ("public", "jobs_api", "chat", "admin"):
        router = importlib.import_module(f"rushhour.reference_server.gateway.{module}").router
        for route in router.routes:
            path = route.path.replace(":path}", "}").replace("{node_id}", "{id}").replace("{job_id}", "{id}")
            if not re.search(re.escape(path) + r"[`?\s]", markdown):
                log.warning(f"{page}: the reference server route {sorted(route.methods)} {route.path} is not documented.")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
