"""The command-line reference, written from the click commands at build time.

Each command of ``fleetcast`` (:mod:`simulator.cli`) gives its usage line, its help text and
a table of its arguments and options (names, value, default, help), read from the click
objects themselves, so the page says what ``fleetcast COMMAND --help`` says.
"""

from __future__ import annotations

import html
import inspect
from typing import Any

import click


def _is_unset(value: Any) -> bool:
    return value is None or type(value).__name__ == "Sentinel" or value == () or value == []


def _cell(text: str) -> str:
    return html.escape(" ".join(str(text).split()), quote=False).replace("|", "\\|")


def param_names(param: click.Parameter) -> list[str]:
    """What a user types: an option's flags (and their ``--no-`` forms), an argument's name."""
    if isinstance(param, click.Argument):
        return [param.human_readable_name]
    return [*param.opts, *param.secondary_opts]


def _value(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Option) and param.is_flag:
        return "flag"
    metavar = param.make_metavar(ctx) if "ctx" in inspect.signature(param.make_metavar).parameters \
        else param.make_metavar()
    return metavar


def _default(param: click.Parameter) -> str:
    if isinstance(param, click.Option) and param.is_flag and param.default in (False, None) \
            or _is_unset(param.default) or callable(param.default):
        return "—"
    return f"`{_cell(param.default)}`"


def commands(group: click.Group) -> list[tuple[str, click.Command]]:
    ctx = click.Context(group, info_name="fleetcast")
    return [(name, group.get_command(ctx, name)) for name in group.list_commands(ctx)]


def _help_text(text: str) -> list[str]:
    """Click help as Markdown: ``\\b`` paragraphs (kept as written) become text blocks."""
    out: list[str] = []
    for paragraph in inspect.cleandoc(text or "").split("\n\n"):
        if paragraph.startswith("\b"):
            out += ["```text", paragraph.lstrip("\b").strip("\n"), "```", ""]
        elif paragraph.strip():
            out += [html.escape(" ".join(paragraph.split()), quote=False), ""]
    return out


def render(group: click.Group) -> str:
    """Every command: usage, help, and its parameters."""
    lines: list[str] = []
    root = click.Context(group, info_name="fleetcast")
    lines += ["## fleetcast", "", "```text", group.get_usage(root).strip(), "```", ""]
    lines += _help_text(group.help or "")
    lines += ["| option | help |", "|---|---|"]
    for param in group.params:
        lines.append(f"| {', '.join(f'`{n}`' for n in param_names(param))} | {_cell(getattr(param, 'help', '') or '')} |")
    lines.append("")
    for name, command in commands(group):
        ctx = click.Context(command, info_name=f"fleetcast {name}", parent=None)
        lines += [f"## fleetcast {name}", "", "```text", command.get_usage(ctx).strip(), "```", ""]
        lines += _help_text(command.help or command.short_help or "")
        lines += ["| argument or option | value | default | help |", "|---|---|---|---|"]
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            names = ", ".join(f"`{n}`" for n in param_names(param))
            required = " (required)" if param.required else ""
            help_text = getattr(param, "help", None) or ("the " + param.human_readable_name.lower())
            lines.append(f"| {names}{required} | `{_cell(_value(param, ctx))}` | {_default(param)} | {_cell(help_text)} |")
        lines.append("")
    return "\n".join(lines)
