"""The app's page table: which page files exist, under which title, for which roles.

The router (``annotate_app/app.py``) shows a user only the pages of their role whose file
exists, so a page appears as soon as its file lands. The URL of a page of another role opens a
hidden stand-in that says which role the page needs (the page's script never runs), and a
visitor who is not logged in gets the login form at every page's URL. Each page still checks the
role itself (``require_role``), so opening a page by URL or page switch is refused server-side
as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

APP_DIR = Path(__file__).resolve().parent
ALL_ROLES: tuple[str, ...] = ("annotator", "reviewer", "admin")
STAFF: tuple[str, ...] = ("reviewer", "admin")
ADMIN: tuple[str, ...] = ("admin",)


@dataclass(frozen=True)
class PageSpec:
    """One page of the app."""

    file: str
    """Path of the page script relative to ``annotate_app/``."""
    title: str
    icon: str
    """A Material icon (``:material/name:``)."""
    roles: tuple[str, ...]
    """Roles that may open the page; must match the page's own ``require_role`` call."""
    section: str
    """Navigation group the page is listed under."""

    @property
    def path(self) -> Path:
        return APP_DIR / self.file


PAGES: tuple[PageSpec, ...] = (
    PageSpec("pages/home.py", "Home", ":material/home:", ALL_ROLES, "Work"),
    PageSpec("pages/annotate.py", "Annotate", ":material/edit_note:", ALL_ROLES, "Work"),
    PageSpec("pages/my_work.py", "My work", ":material/history:", ALL_ROLES, "Work"),
    PageSpec("pages/review_adjudicate.py", "Adjudicate", ":material/gavel:", STAFF, "Review"),
    PageSpec("pages/review_disagreements.py", "Disagreements", ":material/rule:", STAFF, "Review"),
    PageSpec("pages/review_flags.py", "Flags", ":material/flag:", STAFF, "Review"),
    PageSpec("pages/review_answers.py", "Review answers", ":material/fact_check:", STAFF, "Review"),
    PageSpec(
        "pages/calibration_dashboard.py", "Calibration", ":material/insights:", STAFF, "Review"
    ),
    PageSpec("pages/admin_campaigns.py", "Campaigns", ":material/campaign:", ADMIN, "Admin"),
    PageSpec("pages/admin_monitor.py", "Monitor", ":material/monitoring:", ADMIN, "Admin"),
    PageSpec("pages/admin_data.py", "Data", ":material/database:", ADMIN, "Admin"),
    PageSpec("pages/admin_users.py", "Users", ":material/group:", ADMIN, "Admin"),
    PageSpec("pages/admin_audit.py", "Audit trail", ":material/manage_search:", ADMIN, "Admin"),
)
HOME = PAGES[0]


def pages_for(role: str) -> list[PageSpec]:
    """The pages ``role`` may open, in menu order."""
    return [spec for spec in PAGES if role in spec.roles]


def page_available(role: str, file: str) -> bool:
    """Whether ``file`` (relative to ``annotate_app/``) is a page ``role`` can open now."""
    return any(spec.file == file for spec in pages_for(role))
