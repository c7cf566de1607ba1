"""CSV cells a spreadsheet will not run as formulas, and how the project's reader undoes that.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula (a tab or a
carriage return in front of one counts too), so a rationale such as ``=HYPERLINK(...)`` in a CSV
download would act when an admin opens the file ("CSV injection"). OWASP's advice is to write such
a cell with a leading ``'``, which spreadsheets show as text
(https://owasp.org/www-community/attacks/CSV_Injection). A cell that already starts with ``'`` gets
one more, so that :func:`restored` can take exactly one away: the project's CSV reader gets back
every cell as it was (FORMATS.md, "CSV").
"""

from __future__ import annotations

FORMULA_START: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")
NEUTRALISING_PREFIX = "'"


def neutralised(cell: object) -> object:
    """``cell`` as written to a CSV: a text that starts like a formula, or with the prefix
    itself, behind :data:`NEUTRALISING_PREFIX`; numbers and other values unchanged."""
    if isinstance(cell, str) and cell.startswith((*FORMULA_START, NEUTRALISING_PREFIX)):
        return NEUTRALISING_PREFIX + cell
    return cell


def restored(cell: str) -> str:
    """A CSV cell as it was before :func:`neutralised`: one leading prefix taken away."""
    return cell[1:] if cell.startswith(NEUTRALISING_PREFIX) else cell
