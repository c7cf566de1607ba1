"""Audit trail: every recorded change with who and when, filtered, exported as CSV or JSONL."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial

import pandas as pd
import streamlit as st

from annotate_app.auth import require_role
from annotate_app.db import get_engine
from data.services.admin_audit import (
    AuditRow,
    audit_actions,
    audit_count,
    audit_csv,
    audit_jsonl,
    audit_rows,
    record_export,
)
from data.storage.engine import session_scope

user = require_role("admin")
engine = get_engine()
ALL = "(all)"

st.title("Audit trail")
st.caption("Events are only ever added: an edit is a new event, nothing is changed or deleted.")
with session_scope(engine) as session:
    families = audit_actions(session)
family_column, entity_column, limit_column = st.columns(3)
family = family_column.selectbox("Kind of change", [ALL, *families], key="audit_family")
entity_id = entity_column.text_input("Entity id (e.g. a unit, user or campaign id)", key="audit_id")
limit = limit_column.number_input("Show the newest", 1, 100_000, 500, key="audit_limit")
filters = {
    "action_prefix": None if family == ALL else f"{family}.",
    "entity_id": entity_id.strip() or None,
}
with session_scope(engine) as session:
    rows = audit_rows(session, limit=int(limit), **filters)
    total = audit_count(session, **filters)


def _export(
    write: Callable[[list[AuditRow]], bytes], export_format: str, filters: dict[str, str | None]
) -> bytes:
    """Every matching event as a file, built only when a download is clicked (and audited)."""
    with session_scope(engine) as session:
        rows = audit_rows(session, limit=None, **filters)
    shown = ", ".join(f"{name} {value}" for name, value in filters.items() if value) or "all"
    record_export(
        engine, user.id, "audit", source=shown, export_format=export_format, rows=len(rows)
    )
    return write(rows)


st.dataframe(
    pd.DataFrame(
        {
            "When (UTC)": [row.at for row in rows],
            "Who": [row.actor or "(command line)" for row in rows],
            "Action": [row.action for row in rows],
            "Entity": [row.entity for row in rows],
            "Entity id": [row.entity_id for row in rows],
            "Detail": [json.dumps(row.detail, ensure_ascii=False) for row in rows],
        }
    ),
    hide_index=True,
)
st.caption(f"{len(rows)} of {total} matching events shown; the downloads hold all.")
csv_column, jsonl_column = st.columns(2)
csv_column.download_button(
    "Download CSV",
    partial(_export, audit_csv, "csv", filters),
    "audit.csv",
    "text/csv",
    key="audit_csv",
    on_click="ignore",
)
jsonl_column.download_button(
    "Download JSONL",
    partial(_export, audit_jsonl, "jsonl", filters),
    "audit.jsonl",
    "application/jsonl",
    key="audit_jsonl",
    on_click="ignore",
)
