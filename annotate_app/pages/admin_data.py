"""Data in: upload a dataset (JSONL, CSV or Parquet, or a zip with it and its images) or
judgements; a refused file lists every bad line (up to 50) as plain text."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotate_app.auth import require_role
from annotate_app.db import get_engine
from annotate_app.text import escape_markdown
from data.io.importers.uploads import (
    DATASET_SUFFIXES,
    UnsafeUpload,
    UploadRejected,
    import_dataset_upload,
    import_judgements_upload,
)
from data.services.admin import dataset_overview
from data.services.roles import PermissionDenied
from data.storage.engine import session_scope


def show_refusal(error: Exception) -> None:
    """Why nothing was imported: a short heading, then every problem (one per bad line, as the
    command line prints them) as plain text — file text is never read as Markdown."""
    problems = error.problems if isinstance(error, UploadRejected) else [str(error)]
    count = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
    if isinstance(error, UploadRejected) and error.stopped:
        count += " (reading stopped there; there may be more)"
    st.error(f"Nothing was imported: {count}. Fix each line listed below and upload again.")
    st.code("\n".join(problems), language=None, wrap_lines=True)


user = require_role("admin")
engine = get_engine()

st.title("Data")
listing = st.container()

st.subheader("Upload a dataset")
st.caption(
    "A CritiqueLab dataset file (.jsonl with one item per line, or .csv / .parquet with one item "
    "per row; FORMATS.md §1), or a .zip holding that file and its images, named as the file "
    "names them. The file is checked exactly as `critiquelab import jsonl` checks it; nothing is "
    "stored unless every line is valid."
)
with st.form("upload_dataset", clear_on_submit=False):
    upload = st.file_uploader(
        "Dataset file",
        type=[*(suffix.lstrip(".") for suffix in DATASET_SUFFIXES), "zip"],
        key="dataset_file",
    )
    dataset_name = st.text_input("Dataset name (empty: the file name)", key="dataset_name")
    update = st.checkbox("Update records that changed (same ids)", key="dataset_update")
    allow_missing = st.checkbox(
        "Allow missing images (import the text alone)", key="dataset_allow_missing"
    )
    submitted = st.form_submit_button("Import dataset", type="primary")
if submitted and upload is None:
    st.error("Choose a .jsonl, .csv, .parquet or .zip file first.")
elif submitted and upload is not None:
    try:
        with session_scope(engine) as session:
            summary = import_dataset_upload(
                session,
                user.id,
                upload.name,
                upload.getvalue(),
                dataset=dataset_name.strip(),
                update=update,
                allow_missing_images=allow_missing,
            )
    except (UploadRejected, UnsafeUpload, PermissionDenied) as error:
        show_refusal(error)
    else:
        st.success(escape_markdown(f"Imported: {summary.describe()}."))

st.subheader("Upload model judgements")
st.caption(
    "A judgements file (.jsonl, .csv or .parquet, FORMATS.md §3), checked exactly as "
    "`critiquelab judgments import` checks it; nothing is stored unless every line is valid."
)
with st.form("upload_judgements"):
    judgements = st.file_uploader(
        "Judgements file",
        type=[suffix.lstrip(".") for suffix in DATASET_SUFFIXES],
        key="judgements_file",
    )
    update_judgements = st.checkbox("Update judgements that changed", key="judgements_update")
    submitted_judgements = st.form_submit_button("Import judgements", type="primary")
if submitted_judgements and judgements is None:
    st.error("Choose a .jsonl, .csv or .parquet file first.")
elif submitted_judgements and judgements is not None:
    try:
        with session_scope(engine) as session:
            result = import_judgements_upload(
                session, user.id, judgements.name, judgements.getvalue(), update=update_judgements
            )
    except (UploadRejected, UnsafeUpload, PermissionDenied) as error:
        show_refusal(error)
    else:
        st.success(escape_markdown(f"Imported: {result.describe()}."))

with session_scope(engine) as session:
    datasets = dataset_overview(session)
if datasets:
    listing.dataframe(
        pd.DataFrame(
            {
                "Dataset": [row.name for row in datasets],
                "Benchmark": [row.benchmark for row in datasets],
                "Items": [row.items for row in datasets],
                "Responses": [row.responses for row in datasets],
                "Models": [", ".join(row.models) for row in datasets],
                "Demo": [row.synthetic for row in datasets],
            }
        ),
        hide_index=True,
    )
else:
    listing.info("No dataset yet: upload one below.")
