"""Benchmark items: BFCL categories read straight out of the ``bfcl-eval`` wheel, and JSONL sets.

BFCL ships its data inside the ``bfcl-eval`` wheel. We fetch that wheel once with
``pip download --no-deps`` into the user cache (``<cache>/bfcl/``; ``OOO_AGENT_CACHE``
moves the cache) and read the JSON-lines files from the zip: nothing of BFCL is installed
or imported.

Each entry becomes a :class:`BenchItem`:

- ``messages``: the conversation as OpenAI chat dicts;
- ``tools``: OpenAI tool dicts whose parameters are standard JSON Schema (BFCL writes
  ``"dict"``, ``"float"``, ``"tuple"``, ``"any"``; we present them as ``object``, ``number``,
  ``array``, ``string``, as BFCL itself does for function-calling models). Java and
  JavaScript parameters are presented as strings holding a literal of the language, with
  BFCL's notes in the descriptions. Function names keep their dots, as BFCL shows them to
  locally served models; :func:`openai_safe_tools` renames them for APIs that forbid dots;
- ``functions``: BFCL's own function docs, untouched: the AST checker reads their types;
- ``gold``: ``[{name: {param: [acceptable values]}}]``, one dict per expected call
  (``[]`` for ``irrelevance`` and ``live_irrelevance``: the right answer is no call).

Example::

    items = load_bfcl("simple_python", limit=3)
    items[0].tools[0]["function"]["name"]  # 'calculate_triangle_area'
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ooo_agent.errors import DatasetError
from ooo_agent.models._cache import cache_root

__all__ = [
    "BFCL_CATEGORIES",
    "BFCL_EVAL_CATEGORIES",
    "BFCL_MULTI_TURN_CATEGORIES",
    "BFCL_NO_CALL_TRAIN_CATEGORIES",
    "BFCL_TRAIN_CATEGORIES",
    "BFCL_VERSION",
    "BenchItem",
    "Language",
    "bfcl_wheel",
    "functions_to_tools",
    "load_bfcl",
    "load_jsonl",
    "load_multi_turn",
    "multi_turn_function_names",
    "openai_safe_tools",
    "save_jsonl",
]

BFCL_VERSION = "2026.3.23"
"""The ``bfcl-eval`` release whose data we read (pinned: scores are comparable only on one)."""

BFCL_EVAL_CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "simple_java",
    "simple_javascript",
    "irrelevance",
)
"""Categories we evaluate on: never trained on (see ``ooo_agent.train.data``)."""

BFCL_TRAIN_CATEGORIES: tuple[str, ...] = (
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
"""User-contributed ("live") categories: the source of BFCL-derived training requests."""

BFCL_NO_CALL_TRAIN_CATEGORIES: tuple[str, ...] = ("live_irrelevance",)
"""Live requests that no offered tool fits (the right answer is no call): opt-in training
rows that answer in plain text (``python -m ooo_agent.train.data --live-irrelevance``)."""

BFCL_MULTI_TURN_CATEGORIES: tuple[str, ...] = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
"""Multi-turn agent tasks over BFCL's executable toolsets: evaluation only (their function
names are banned from training like every evaluation category's)."""

BFCL_CATEGORIES: tuple[str, ...] = (
    BFCL_EVAL_CATEGORIES + BFCL_TRAIN_CATEGORIES + BFCL_NO_CALL_TRAIN_CATEGORIES
)

Language = Literal["python", "java", "javascript"]

_DATA_PREFIX = "bfcl_eval/data/"

# BFCL type names -> JSON Schema, as BFCL converts them for function-calling models.
_JSON_SCHEMA_TYPES: dict[str, str] = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
    "any": "string",
}

_LANGUAGE_NOTE: dict[str, str] = {
    "python": " Note that the provided function is in Python 3 syntax.",
    "java": " Note that the provided function is in Java 8 SDK syntax.",
    "javascript": " Note that the provided function is in JavaScript syntax.",
}

_OPENAI_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class BenchItem:
    """One benchmark request: a conversation, the tools offered, and the acceptable calls."""

    id: str
    category: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    """OpenAI tool dicts (``{"type": "function", "function": {...}}``), JSON-Schema types."""
    gold: list[dict[str, dict[str, list[Any]]]]
    """One ``{name: {param: [acceptable values]}}`` per expected call; ``""`` = may be absent."""
    functions: list[dict[str, Any]] = field(default_factory=list)
    """BFCL's function docs with their original types (what the checker reads)."""
    language: Language = "python"

    @property
    def tool_names(self) -> list[str]:
        """Names of the offered tools, in order."""
        return [str(t["function"]["name"]) for t in self.tools]

    def schemas(self) -> list[dict[str, Any]]:
        """Function docs for checking: BFCL's own when known, else the tools' functions."""
        if self.functions:
            return self.functions
        return [dict(t["function"]) for t in self.tools]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict, the line format of :func:`save_jsonl`."""
        return {
            "id": self.id,
            "category": self.category,
            "language": self.language,
            "messages": self.messages,
            "tools": self.tools,
            "gold": self.gold,
            "functions": self.functions,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, default_category: str = "custom") -> BenchItem:
        """Build an item from :meth:`to_dict`'s shape; raises :class:`DatasetError` if malformed.

        ``tools`` may also be bare function dicts (``{"name", "parameters"}``); ``functions``
        and ``language`` are optional.
        """
        try:
            item_id = str(data["id"])
            messages = data["messages"]
            raw_tools = data["tools"]
            gold = data.get("gold", [])
        except (KeyError, TypeError) as exc:
            raise DatasetError(f"benchmark item lacks field {exc}") from None
        if not isinstance(messages, list) or not all(
            isinstance(m, dict) and "role" in m for m in messages
        ):
            raise DatasetError(
                f"item {item_id!r}: messages must be a list of {{'role', ...}} dicts"
            )
        if not isinstance(raw_tools, list):
            raise DatasetError(f"item {item_id!r}: tools must be a list")
        tools = [_as_tool_dict(t, item_id) for t in raw_tools]
        _check_gold(gold, item_id)
        language = data.get("language", "python")
        if language not in _LANGUAGE_NOTE:
            raise DatasetError(f"item {item_id!r}: unknown language {language!r}")
        functions = data.get("functions") or []
        return cls(
            id=item_id,
            category=str(data.get("category") or default_category),
            messages=[dict(m) for m in messages],
            tools=tools,
            gold=gold,
            functions=list(functions),
            language=language,
        )


# -- the wheel --------------------------------------------------------------------------


def bfcl_wheel(cache_dir: str | os.PathLike[str] | None = None, *, download: bool = True) -> Path:
    """Path of the cached ``bfcl-eval`` wheel, downloading it (``pip download --no-deps``) once.

    Raises :class:`DatasetError` when it is not cached and cannot be downloaded.
    """
    folder = cache_root(cache_dir) / "bfcl"
    pattern = f"bfcl_eval-{BFCL_VERSION}-*.whl"
    found = sorted(folder.glob(pattern))
    if found:
        return found[0]
    if not download:
        raise DatasetError(f"bfcl-eval=={BFCL_VERSION} is not cached in {folder}")
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
        "--quiet", f"bfcl-eval=={BFCL_VERSION}", "-d", str(folder),
    ]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DatasetError(f"could not run pip to fetch bfcl-eval: {exc}") from exc
    found = sorted(folder.glob(pattern))
    if proc.returncode != 0 or not found:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise DatasetError(
            f"could not download bfcl-eval=={BFCL_VERSION} into {folder}: " + " | ".join(detail)
        )
    return found[0]


def _read_jsonl_member(wheel: zipfile.ZipFile, member: str) -> list[dict[str, Any]]:
    try:
        text = wheel.read(member).decode("utf-8")
    except KeyError:
        raise DatasetError(f"{member} is not in the bfcl-eval wheel") from None
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _read_category(
    wheel: zipfile.ZipFile, category: str, path: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str | None]:
    """A category's entries, its possible answers, and the answers' member name (if any)."""
    member = _data_member(wheel, category, answers=False)
    if member is None:
        raise DatasetError(f"category {category!r} is not in {path.name}")
    answer_member = _data_member(wheel, category, answers=True)
    answers = _read_jsonl_member(wheel, answer_member) if answer_member else []
    return _read_jsonl_member(wheel, member), answers, answer_member


def _data_member(wheel: zipfile.ZipFile, category: str, *, answers: bool) -> str | None:
    folder = _DATA_PREFIX + ("possible_answer/" if answers else "")
    pattern = re.compile(re.escape(folder) + r"BFCL_v\d+_" + re.escape(category) + r"\.json$")
    names = [n for n in wheel.namelist() if pattern.match(n)]
    return sorted(names)[-1] if names else None


def load_bfcl(
    category: str,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    limit: int | None = None,
    wheel_path: str | os.PathLike[str] | None = None,
) -> list[BenchItem]:
    """Items of one BFCL category, in BFCL's order (first ``limit`` when given).

    Raises :class:`DatasetError` for an unknown category or a missing / unreadable wheel.
    """
    if category not in BFCL_CATEGORIES:
        raise DatasetError(
            f"unknown BFCL category {category!r}; known: {', '.join(BFCL_CATEGORIES)}"
        )
    path = Path(wheel_path) if wheel_path is not None else bfcl_wheel(cache_dir)
    try:
        with zipfile.ZipFile(path) as wheel:
            entries, answers, answer_member = _read_category(wheel, category, path)
    except (zipfile.BadZipFile, OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"cannot read BFCL data from {path}: {exc}") from exc
    gold_by_id = {a["id"]: a["ground_truth"] for a in answers}
    if limit is not None:
        entries = entries[:limit]
    items = []
    for entry in entries:
        if answer_member is not None and entry["id"] not in gold_by_id:
            raise DatasetError(f"BFCL entry {entry['id']!r} has no possible answer")
        items.append(_bfcl_item(entry, category, gold_by_id.get(entry["id"], [])))
    return items


def load_multi_turn(
    category: str = "multi_turn_base",
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    limit: int | None = None,
) -> tuple[list[dict[str, Any]], dict[str, list[Any]], dict[str, list[dict[str, Any]]]]:
    """One multi-turn category as BFCL ships it: its entries (``question`` is a list of
    turns, ``initial_config`` the toolset classes' state), the gold calls per turn by id, and
    each toolset class's function docs (``multi_turn_func_doc/*.json``) by file stem."""
    if category not in BFCL_MULTI_TURN_CATEGORIES:
        raise DatasetError(
            f"unknown multi-turn category {category!r}; known: "
            + ", ".join(BFCL_MULTI_TURN_CATEGORIES)
        )
    path = bfcl_wheel(cache_dir)
    try:
        with zipfile.ZipFile(path) as wheel:
            entries, answers, _ = _read_category(wheel, category, path)
            docs = {
                Path(name).stem: _read_jsonl_member(wheel, name)
                for name in wheel.namelist()
                if name.startswith(_DATA_PREFIX + "multi_turn_func_doc/") and name.endswith(".json")
            }
    except (zipfile.BadZipFile, OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"cannot read BFCL data from {path}: {exc}") from exc
    gold = {str(a["id"]): list(a["ground_truth"]) for a in answers}
    return entries[:limit] if limit is not None else entries, gold, docs


def multi_turn_function_names(cache_dir: str | os.PathLike[str] | None = None) -> frozenset[str]:
    """Every function of BFCL's multi-turn toolsets (what training must not see)."""
    _, _, docs = load_multi_turn(cache_dir=cache_dir, limit=0)
    return frozenset(str(f["name"]) for functions in docs.values() for f in functions)


def _language_of(category: str) -> Language:
    if category.endswith("java"):
        return "java"
    if category.endswith("javascript"):
        return "javascript"
    return "python"


def _bfcl_item(entry: Mapping[str, Any], category: str, gold: list[Any]) -> BenchItem:
    language = _language_of(category)
    # BFCL's question is a list of turns; these categories are single-turn, so flatten.
    messages = [dict(m) for turn in entry["question"] for m in turn]
    functions = copy.deepcopy(list(entry["function"]))
    return BenchItem(
        id=str(entry["id"]),
        category=category,
        messages=messages,
        tools=functions_to_tools(functions, language),
        gold=gold,
        functions=functions,
        language=language,
    )


# -- presenting BFCL functions as tools -------------------------------------------------


def functions_to_tools(
    functions: Iterable[Mapping[str, Any]], language: Language = "python"
) -> list[dict[str, Any]]:
    """BFCL function docs → OpenAI tool dicts with JSON-Schema parameters (inputs untouched).

    Python: BFCL types become JSON-Schema types. Java / JavaScript: every parameter becomes
    a string holding a literal of the language, and the description says the original type,
    as BFCL prompts them.
    """
    tools = []
    for function in functions:
        doc = copy.deepcopy(dict(function))
        doc["description"] = str(doc.get("description", "")) + _LANGUAGE_NOTE[language]
        params = doc.get("parameters") or {}
        properties = params.get("properties") or {}
        if language == "python":
            properties = {k: _json_schema(v) for k, v in properties.items()}
        else:
            properties = {k: _as_language_string(v, language) for k, v in properties.items()}
        doc["parameters"] = {
            "type": "object",
            "properties": properties,
            "required": list(params.get("required", [])),
        }
        tools.append({"type": "function", "function": doc})
    return tools


def _json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    out["type"] = _JSON_SCHEMA_TYPES.get(str(schema.get("type", "")), "string")
    if isinstance(schema.get("items"), Mapping):
        out["items"] = _json_schema(schema["items"])
    if isinstance(schema.get("properties"), Mapping):
        out["properties"] = {k: _json_schema(v) for k, v in schema["properties"].items()}
    return out


def _as_language_string(schema: Mapping[str, Any], language: Language) -> dict[str, Any]:
    out = dict(schema)
    kind = str(schema.get("type", ""))
    lang = "Java" if language == "java" else "JavaScript"
    description = str(schema.get("description", ""))
    if kind == "any":
        description += (
            f" This parameter can be of any type of {lang} object in string representation."
        )
    else:
        description += f" This is {lang} {kind} type parameter in string representation."
    items = schema.get("items")
    if kind in ("Array", "ArrayList", "array") and isinstance(items, Mapping):
        description += (
            f" The list elements are of type {items.get('type')}; they are not in string"
            " representation."
        )
        out.pop("items", None)
    if language == "javascript" and kind == "dict" and "properties" in schema:
        description += (
            " The dictionary entries have the following schema; they are not in string"
            f" representation. {json.dumps(schema['properties'])}"
        )
        out.pop("properties", None)
    out["description"] = description
    out["type"] = "string"
    return out


def openai_safe_tools(
    tools: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Tools renamed for APIs that require ``^[A-Za-z0-9_-]{1,64}$`` names, and the way back.

    Dots become ``_`` (as BFCL does for such models); returns ``(tools, {new: original})``.
    Scoring maps called names back through the dict before :func:`~ooo_agent.bench.ast_check.check`.
    """
    renamed: list[dict[str, Any]] = []
    back: dict[str, str] = {}
    for tool in tools:
        function = dict(tool["function"])
        original = str(function["name"])
        name = (
            original
            if _OPENAI_NAME.match(original)
            else re.sub(r"[^A-Za-z0-9_-]", "_", original)[:64]
        )
        base, n = name, 2
        while name in back:  # keep names unique after renaming
            suffix = f"_{n}"
            name, n = base[: 64 - len(suffix)] + suffix, n + 1
        back[name] = original
        function["name"] = name
        renamed.append({**tool, "function": function})
    return renamed, back


# -- JSONL sets -------------------------------------------------------------------------


def load_jsonl(path: str | os.PathLike[str], *, category: str | None = None) -> list[BenchItem]:
    """Items from a JSON-lines file in :meth:`BenchItem.to_dict`'s shape.

    Blank lines are skipped; a malformed line raises :class:`DatasetError` naming its number.
    ``category`` fills items that carry none (default: the file's stem).
    """
    source = Path(path)
    default = category or source.stem
    items: list[BenchItem] = []
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"cannot read {source}: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{source}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise DatasetError(f"{source}:{number}: each line must be a JSON object")
        try:
            items.append(BenchItem.from_dict(data, default_category=default))
        except DatasetError as exc:
            raise DatasetError(f"{source}:{number}: {exc}") from None
    return items


def save_jsonl(items: Iterable[BenchItem], path: str | os.PathLike[str]) -> Path:
    """Write items as JSON lines (readable back with :func:`load_jsonl`); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8") as out:
        for item in items:
            out.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n")
    return target


def _as_tool_dict(tool: Any, item_id: str) -> dict[str, Any]:
    if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
        function = tool["function"]
    elif isinstance(tool, dict) and "name" in tool:
        function = tool
    else:
        raise DatasetError(f"item {item_id!r}: each tool must be an OpenAI tool or function dict")
    if not isinstance(function.get("name"), str) or not function["name"]:
        raise DatasetError(f"item {item_id!r}: a tool has no name")
    return {"type": "function", "function": dict(function)}


def _check_gold(gold: Any, item_id: str) -> None:
    if not isinstance(gold, list):
        raise DatasetError(f"item {item_id!r}: gold must be a list of {{name: {{param: [...]}}}}")
    for call in gold:
        ok = isinstance(call, dict) and len(call) == 1
        params = next(iter(call.values())) if ok else None
        if (
            not ok
            or not isinstance(params, dict)
            or not all(isinstance(v, list) for v in params.values())
        ):
            raise DatasetError(
                f"item {item_id!r}: each gold call must be {{name: {{param: [acceptable values]}}}}"
            )
