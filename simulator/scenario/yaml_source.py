"""Read YAML safely and remember where every value came from.

PyYAML's ``SafeLoader`` composes the document into a node graph that carries line marks;
we walk that graph once to map each field path to its line, then construct plain Python
values with the safe constructor. Tags such as ``!!python/object`` are rejected, never
constructed. Aliases are followed during the walk under a node budget, so a "billion
laughs" document is refused after a bounded amount of work instead of exhausting memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from simulator.scenario.errors import Loc, ScenarioError

#: Most YAML nodes a scenario may expand to, counting every alias use.
MAX_NODES = 200_000
#: Largest scenario file read, in bytes.
MAX_BYTES = 5_000_000


def read_yaml_file(path: str | Path) -> tuple[Any, dict[Loc, int]]:
    """Load a scenario file; return its data and a map from field path to 1-based line."""
    path = Path(path)
    source = str(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ScenarioError((), f"cannot read {source}: {exc.strerror}", source=source) from None
    if path.is_dir():
        raise ScenarioError((), f"{source} is a directory, not a scenario file", source=source)
    if size > MAX_BYTES:
        raise ScenarioError((), f"{source} is {size:,} bytes; scenarios are limited to {MAX_BYTES:,}")
    try:  # at most the limit and one byte: a device or a pipe (/dev/urandom) has no size to check
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ScenarioError((), f"cannot read {source}: {exc.strerror}", source=source) from None
    if len(raw) > MAX_BYTES:
        raise ScenarioError((), f"{source} holds more than {MAX_BYTES:,} bytes; scenarios are limited to {MAX_BYTES:,}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError((), f"{source} is not UTF-8 text ({exc.reason})") from None
    return parse_yaml_text(text, source)


def _unconstructible(loader: yaml.SafeLoader, node: yaml.Node, loc: Loc) -> tuple[Loc, int, str] | None:
    """The field path, line and text of the first scalar YAML cannot turn into a value."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            found = _unconstructible(loader, value, (*loc, key.value))
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for index, value in enumerate(node.value):
            found = _unconstructible(loader, value, (*loc, index))
            if found:
                return found
    elif isinstance(node, yaml.ScalarNode) and node.tag.endswith(":timestamp"):
        try:
            loader.construct_yaml_timestamp(node)
        except (ValueError, OverflowError):
            return loc, node.start_mark.line + 1, node.value
    return None


def parse_yaml_text(text: str, source: str = "<string>") -> tuple[Any, dict[Loc, int]]:
    """Parse YAML text; return its data and a map from field path to 1-based line."""
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:  # a control character (NUL, say): YAML refuses the text
        raise _reader_error(exc, text) from None
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            raise _yaml_error(exc) from None
        except yaml.YAMLError as exc:
            raise ScenarioError((), f"not valid YAML: {exc}") from None
        if node is None:
            raise ScenarioError((), f"{source} is empty; a scenario needs at least 'name'")
        lines: dict[Loc, int] = {}
        _map_lines(node, (), lines, [0])
        try:
            data = loader.construct_document(node)
        except yaml.MarkedYAMLError as exc:
            raise _yaml_error(exc) from None
        except (ValueError, TypeError, OverflowError) as exc:  # e.g. a date such as 2026-13-01
            where = _unconstructible(loader, node, ())
            if where is None:
                raise ScenarioError((), f"not valid YAML: {exc}") from None
            loc, line, value = where
            raise ScenarioError(loc, f"{value!r} is not a valid date ({exc})", line) from None
    except RecursionError:  # [[[[… hundreds deep, or an alias inside itself (&a [*a])
        raise ScenarioError((), "not valid YAML: values nested too deeply (or an alias that contains itself)") from None
    finally:
        loader.dispose()
    return data, lines


def _reader_error(exc: yaml.reader.ReaderError, text: str) -> ScenarioError:
    """A character YAML does not accept in a document, with its line."""
    line = text.count("\n", 0, exc.position) + 1
    code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
    return ScenarioError((), f"not valid YAML: a control character (code {code:#04x}) that YAML does not allow "
                             "(is this a text file?)", line=line)


def _yaml_error(exc: yaml.MarkedYAMLError) -> ScenarioError:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else None
    problem = exc.problem or exc.context or "invalid YAML"
    if "constructor" in (problem or "") or "tag" in (problem or ""):
        problem = f"{problem} (only plain YAML values are allowed; tags never construct objects)"
    return ScenarioError((), f"not valid YAML: {problem}", line=line)


def _map_lines(node: yaml.Node, loc: Loc, lines: dict[Loc, int], count: list[int]) -> None:
    count[0] += 1
    if count[0] > MAX_NODES:
        raise ScenarioError(
            loc,
            f"the document expands to more than {MAX_NODES:,} values "
            "(aliases referring to aliases?); refusing to expand it",
            line=node.start_mark.line + 1,
        )
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            if key in seen and key != "<<":
                raise ScenarioError((*loc, key), "appears twice in the same mapping", line=key_node.start_mark.line + 1)
            seen.add(key)
            lines.setdefault((*loc, key), key_node.start_mark.line + 1)
            _map_lines(value_node, (*loc, key), lines, count)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _map_lines(item, (*loc, index), lines, count)
