"""How `acrl` reads and describes its command line with tyro: `parse` (one-line errors) and `synopsis`.

`parse` turns tyro's argument errors into one `InputError` line each. The precise messages ("--seed
takes an integer, got 'abc'.") come from tyro's parse-error hook, `tyro._errors.on_parse_error`, a
private API (tested with tyro 1.0.17; pyproject.toml pins the range). It is used in one place,
`parse_error_hook`; where it is missing (another tyro) `parse` falls back to the public API: tyro's own
error box is swallowed and the error is one line naming the command's --help.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import io
import itertools
import types
import typing
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import tyro

from acrl.core.errors import InputError


def values(metavar: str, help: str | None = None) -> object:
    """tyro's settings of a list option: the metavar "METAVAR ...", no "(default: )" (an empty list), and `help`
    (None: the field's docstring)."""
    return tyro.conf.arg(metavar=f"{metavar} ...", help=help, help_behavior_hint="")


def subcommands(union: Any) -> dict[str, type]:
    """{name: dataclass} of a union of `Annotated[cls, tyro.conf.subcommand(name)]`, in its order."""
    return {typing.get_args(option)[1].name: typing.get_args(option)[0] for option in typing.get_args(union)}


def parse_error_hook() -> Callable[[Callable[[Any], None]], Any] | None:
    """tyro's private parse-error hook (`tyro._errors.on_parse_error`: a context manager that calls its function
    with each parse-error event before tyro prints its box and exits), or None where this tyro lacks it."""
    try:
        from tyro import _errors
    except ImportError:
        return None
    return getattr(_errors, "on_parse_error", None)


def parse(command: Any, argv: Sequence[str], commands: dict[str, type], **kwargs: Any) -> Any:
    """`tyro.cli(command, args=argv, **kwargs)`, whose argument errors raise `InputError` with one line.

    Args:
        command: the union of subcommands.
        argv: the arguments.
        commands: {name: dataclass} of the commands and their subcommands ("experiment extrapolation"), for the
            messages.
    Raises:
        InputError: an unknown command or option, a bad value or choice, a missing argument.
        SystemExit: --help (code 0).
    """
    hook = parse_error_hook()
    if hook is None:
        box = io.StringIO()
        try:
            with contextlib.redirect_stderr(box):
                return tyro.cli(command, args=list(argv), **kwargs)
        except SystemExit as exit:
            if exit.code == 0:
                raise
            see = _see(argv, commands)
            raise InputError(f"cannot parse the arguments {' '.join(argv)}; {see} lists the options.") from None
    with hook(functools.partial(_reject, list(argv), commands)):
        return tyro.cli(command, args=list(argv), **kwargs)


def _see(argv: Sequence[str], commands: dict[str, type]) -> str:
    """The help to read: "`acrl COMMAND --help`" of the longest command that argv names ("experiment discrete"),
    else "`acrl --help`"."""
    words = [word for word in argv if not word.startswith("-")]
    named = [name for name in commands if name.split() == words[: len(name.split())]]
    return f"`acrl {max(named, key=len)} --help`" if named else "`acrl --help`"


def _reject(argv: list[str], commands: dict[str, type], event: Any) -> None:
    """tyro's parse-error hook: raise the `InputError` that says, in one line, which argument was wrong (the
    event's classes and fields are tyro's private ones).

    Raises:
        InputError: always (an unknown command or option, a bad value or choice, a missing argument).
    """
    from tyro import _errors

    tops = [name for name in commands if " " not in name]
    command = next((word for word in argv if word in tops), None)
    see = _see(argv, commands)

    def name(arg) -> str:  # an option's flag, a positional's field name in capitals
        return arg.field.intern_name.upper() if arg.is_positional() else arg.display_name()

    def and_(words: list[str]) -> str:
        return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)

    if command is None and argv and not argv[0].startswith("-"):
        close = difflib.get_close_matches(argv[0], tops, n=1)
        raise InputError(
            f"unknown command {argv[0]!r}{f' (did you mean {close[0]}?)' if close else ''}; the "
            f"commands are {', '.join(tops)}."
        )
    subs = [name.split()[1] for name in commands if command and name.startswith(f"{command} ")]
    chosen = argv[argv.index(command) + 1 :][:1] if command else []
    if subs and chosen and not chosen[0].startswith("-") and chosen[0] not in subs:
        close = difflib.get_close_matches(chosen[0], subs, n=1)
        raise InputError(
            f"unknown {command} {chosen[0]!r}{f' (did you mean {close[0]}?)' if close else ''}; choose "
            f"{', '.join(subs)}."
        )
    if isinstance(event, _errors.UnrecognizedArgs):
        raise InputError(
            f"unrecognized argument{'s' * (len(event.tokens) > 1)} {' '.join(event.tokens)}; {see} lists the options."
        )
    if isinstance(event, _errors.InvalidChoice):
        raise InputError(
            f"{name(event.argument)} must be {and_(list(event.choices)).replace(' and ', ' or ')}, got {event.value!r}."
        )
    if isinstance(event, _errors.InstantiationFailure) and event.argument is not None:
        arg = event.argument
        flag, single = arg.display_name(), arg.lowered.nargs == 1
        given = []
        for i, word in enumerate(argv):
            option, equals, value = word.partition("=")
            if option.replace("_", "-") == flag:
                following = (
                    argv[i + 1 : i + 2]
                    if single
                    else list(itertools.takewhile(lambda w: not w.startswith("-"), argv[i + 1 :]))
                )
                given = [value] if equals else following
        base = next(
            (t for t in typing.get_args(arg.field.type_stripped) if t is not type(None)), arg.field.type_stripped
        )
        kind = (
            {int: "an integer", float: "a number"}.get(base, arg.lowered.metavar)
            if single
            else {int: "integers", float: "numbers"}.get(base, arg.lowered.metavar)
        )
        raise InputError(f"{flag} takes {kind}, got {' '.join(map(repr, given)) or 'nothing'}.")
    if isinstance(event, _errors.BadValue):
        raise InputError(
            f"{name(event.argument)} needs a value ({event.argument.lowered.metavar}); {see} describes it."
        )
    if isinstance(event, _errors.MissingArgs):
        missing = [name(arg.arg) for arg in event.missing_arguments]
        where = see.removesuffix(" --help`").removeprefix("`")
        raise InputError(f"{where} needs {and_(missing)}; {see} describes {'them' if missing[1:] else 'it'}.")
    if isinstance(event, _errors.MissingSubcommand):
        if command is None:
            raise InputError(f"acrl needs a command: {', '.join(tops)} (`acrl --help` describes them).")
        raise InputError(f"acrl {command} needs one of {', '.join(subs)} (`acrl {command} --help` describes them).")
    raise InputError(f"cannot parse the arguments {' '.join(argv)}; {see} lists the options.")


def synopsis(commands: dict[str, type], width: int = 110) -> str:
    """The commands and their options, one paragraph each, from their dataclasses (the README's CLI block).

    Positional arguments come first, then the command's own options, then those it inherits. A
    placeholder is the field's metavar where it sets one, else Literal choices as a|b, N for an int, X
    for a float and the field's name in capitals for a string; options with a default are in brackets,
    a bool that defaults to true is `--no-FLAG`. Lines wrap at `width`.

    Args:
        commands: {"train": Train, ..., "experiment extrapolation": Extrapolation, ...}: each command line's
            name and dataclass (a command that only chooses a subcommand is left out).
    """
    paragraphs = []
    for command, cls in commands.items():
        hints = typing.get_type_hints(cls, include_extras=True)
        positional, own, inherited = [], [], []
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            extras = typing.get_args(hint)[1:] if typing.get_origin(hint) is Annotated else ()
            base = typing.get_args(hint)[0] if extras else hint
            base = (
                next((t for t in typing.get_args(base) if t is not type(None)), base)
                if typing.get_origin(base) in (types.UnionType, typing.Union)
                else base
            )
            metavar = next((m.metavar for m in extras if getattr(m, "metavar", None)), None)
            if metavar is None:
                metavar = (
                    "|".join(typing.get_args(base))
                    if typing.get_origin(base) is Literal
                    else {int: "N", float: "X"}.get(base, f.name.upper())
                )
            optional = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            flag = f"--{f.name.replace('_', '-')}"
            words = own if f.name in vars(cls).get("__annotations__", {}) else inherited
            if any(m is typing.get_args(tyro.conf.Positional[int])[1] for m in extras):
                positional.append(metavar)
            elif base is bool:
                words.append(f"[--no-{flag[2:]}]" if f.default else f"[{flag}]")
            else:
                words.append(f"[{flag} {metavar}]" if optional else f"{flag} {metavar}")
        lines, indent = [f"acrl {command}"], " " * len(f"acrl {command} ")
        for word in positional + own + inherited:
            if len(lines[-1]) + 1 + len(word) > width:
                lines.append(indent + word)
            else:
                lines[-1] += " " + word
        paragraphs.append("\n".join(lines))
    return "\n".join([*paragraphs, "acrl --version"])
