"""Error messages that name options of the call that failed, in the words of whoever reads them.

A library error that says how to fix a call names the option to change. The library speaks of its
own parameters (``eval_fraction``); the command line calls the same option ``--eval-fraction``
and a page shows a field. So such a message is written once, as an :class:`OptionText`: a template
where ``{name}`` stands for the option ``name`` (the library's parameter name) and every other
field is a value given beside it. ``str()`` names options in the library's words; a front end
renders the text with its own names (:meth:`OptionText.render`): the CLI with its flags.

An error class takes an :class:`OptionText` as its message by deriving from :class:`OptionError`.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping

OptionNamer = Callable[[str], str]
"""How a reader names an option, given its parameter name (``eval_fraction``)."""


def library_words(option: str) -> str:
    """An option as the library names it in a message: ``eval_fraction`` → ``eval fraction``."""
    return option.replace("_", " ")


class OptionText:
    """A message template whose ``{name}`` fields are options, except those given as values.

    ``OptionText("{eval_fraction} is {value}; give a number in [0, 1)", value=1.5)`` reads
    "eval fraction is 1.5; give a number in [0, 1)" as ``str()`` and "--eval-fraction is 1.5; …"
    rendered by the CLI. Values are inserted as text, never parsed as templates themselves, so a
    value holding braces (a path, a user's label) is safe; a value that is an :class:`OptionText`
    itself is rendered with the same names.
    """

    def __init__(self, template: str, **values: object) -> None:
        fields = [field for _, field, _, _ in string.Formatter().parse(template) if field]
        if any(not field.isidentifier() for field in fields):
            raise TypeError(f"option text fields are plain names: {template!r}")
        self.template = template
        self.values: Mapping[str, object] = values
        self.options = tuple(field for field in dict.fromkeys(fields) if field not in values)

    def render(self, name_option: OptionNamer = library_words) -> str:
        """The message with each option named by ``name_option``."""
        names = {option: name_option(option) for option in self.options}
        values = {
            name: value.render(name_option) if isinstance(value, OptionText) else value
            for name, value in self.values.items()
        }
        return self.template.format_map({**names, **values})

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"OptionText({self.template!r}, values={dict(self.values)!r})"


class OptionError(ValueError):
    """Bad input whose message (``args[0]``) may be an :class:`OptionText`.

    ``str(error)`` names options in the library's words; :meth:`render` lets a front end name
    them its own way. A plain ``str`` message works as for any ``ValueError``.
    """

    def render(self, name_option: OptionNamer) -> str:
        """The message with each option named by ``name_option``."""
        message = self.args[0] if len(self.args) == 1 else None
        if isinstance(message, OptionText):
            return message.render(name_option)
        return str(self)


Message = str | OptionText
"""An error message: plain text, or text that names options (:class:`OptionText`)."""


def render_message(message: Message, name_option: OptionNamer) -> str:
    """``message`` with its options named by ``name_option`` (a plain string as it is)."""
    return message.render(name_option) if isinstance(message, OptionText) else message
