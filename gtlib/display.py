"""Display helpers for the chapters: every table on a page goes through :func:`table`.

Tables are rendered as HTML (never as Markdown text, which the static site shows as a paragraph of
pipes), inside a horizontal scroll container so that a wide table never widens the page on a phone.
"""

from __future__ import annotations

import html
import math
from typing import Any, Iterable, Mapping, Sequence

__all__ = [
    # tables
    "table",
    "table_html",
    # numbers
    "fmt",
]


def fmt(value: Any, digits: int = 3) -> str:
    """Format one cell: floats to ``digits`` significant digits, everything else with ``str``.

    Parameters
    ----------
    value : Any
        The cell: a number (Python, numpy or a 0-d tensor) or anything with ``str``.
    digits : int, default 3
        Significant digits of a float, at least 1.

    Returns
    -------
    str
        The cell as text.
    """
    if not isinstance(digits, int) or isinstance(digits, bool) or digits < 1:
        raise ValueError(f"digits must be a positive int, got {digits!r}")
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        return f"{value:.{digits}g}"
    return str(value)


def table_html(
    rows: Iterable[Mapping[str, Any]] | Iterable[Sequence[Any]],
    columns: Sequence[str] | None = None,
    caption: str | None = None,
    digits: int = 3,
) -> str:
    """HTML for a table of rows (dicts keyed by column, or sequences in ``columns`` order).

    Parameters
    ----------
    rows : iterable of dict or sequence
        The table's rows. Dict rows take their columns from the first row unless ``columns``
        is given.
    columns : sequence of str, optional
        Column headers (required when rows are sequences).
    caption : str, optional
        A caption shown above the table.
    digits : int
        Significant digits for floats.

    Returns
    -------
    str
        ``<div class="gtlib-table-wrap" tabindex="0" role="region" aria-label="table (scrolls sideways)"><table class="gtlib-table">...</table></div>``.
    """
    if (
        rows is None
        or isinstance(rows, (str, bytes, Mapping))
        or not hasattr(rows, "__iter__")
    ):
        raise TypeError(
            f"rows must be a list of rows (dicts or sequences), got "
            f"{type(rows).__name__}"
        )
    if columns is not None:
        if isinstance(columns, (str, bytes)) or not hasattr(columns, "__iter__"):
            raise TypeError(
                f"columns must be a list of column names, got {columns!r}"
            )
        columns = list(columns)
        if not columns:
            raise ValueError("columns must name at least one column, got none")
    if caption is not None and not isinstance(caption, str):
        raise TypeError(
            f"caption must be a str or None, got {type(caption).__name__}"
        )
    rows = list(rows)
    if not rows:
        raise ValueError("rows must not be empty")
    if isinstance(rows[0], Mapping):
        if columns is None:
            columns = list(rows[0].keys())
        body = []
        for i, r in enumerate(rows):
            if not isinstance(r, Mapping):
                raise TypeError(
                    f"rows[{i}] is a {type(r).__name__}; all rows must be dicts"
                )
            body.append([r.get(c, "") for c in columns])
    else:
        if columns is None:
            raise ValueError("columns must be given when rows are sequences")
        body = []
        for i, r in enumerate(rows):
            if (
                isinstance(r, (str, bytes))
                or not isinstance(r, Sequence)
                or len(r) != len(columns)
            ):
                raise ValueError(
                    f"rows[{i}] must be a sequence of {len(columns)} cells, got {r!r}"
                )
            body.append(list(r))
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    trs = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape(fmt(v, digits))}</td>" for v in r)
        + "</tr>"
        for r in body
    )
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return (
        f'<div class="gtlib-table-wrap" tabindex="0" role="region" aria-label="table (scrolls sideways)"><table class="gtlib-table">{cap}<thead><tr>{head}</tr>'
        f"</thead><tbody>{trs}</tbody></table></div>"
    )


def table(rows, columns=None, caption=None, digits: int = 3):
    """Display-ready HTML table (the last expression of a cell).

    Display-ready HTML table (the last expression of a cell); see :func:`table_html`.

    Parameters
    ----------
    rows : object
        The rows: mappings (column name -> value) or sequences of values.
    columns : object, default None
        The column names and their order (default: the keys of the first mapping row).
    caption : object, default None
        A caption shown above the table.
    digits : int, default 3
        Significant digits of the floats (see :func:`fmt`).

    Returns
    -------
    IPython.display.HTML
        The table, shown when it is the last expression of a cell.
    """
    from IPython.display import HTML

    return HTML(table_html(rows, columns=columns, caption=caption, digits=digits))
