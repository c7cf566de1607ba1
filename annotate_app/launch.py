"""``python -m annotate_app.launch run annotate_app/app.py [flags]``: Streamlit's own CLI, with
the legacy ``pages/`` folder mode switched off before the first session starts.

Streamlit decides per process whether a ``pages/`` folder beside the entry script makes a
"version 1" multipage app, and only switches that off once the entry script has called
``st.navigation``. Until then (the first request after a start) a URL naming a page would run
that page script directly, with every page file listed in the sidebar, bypassing the router.
The pages still check roles themselves (``require_role``), but the router should be the only way
in, so the launcher settles the question before any session exists.
"""

from __future__ import annotations

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli


def main() -> None:
    PagesManager.uses_pages_directory = False
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
