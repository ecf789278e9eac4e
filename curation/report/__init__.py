"""One self-contained HTML page per run: page (the page and its assembly), queries (the SQL it asks the
run's catalog), pieces (the catalog it asks, tables, charts), sections (run-wide sections), tasks (each
task's view)."""

from curation.report.page import REPORT_FILE, write_report
from curation.report.pieces import COLOURS

__all__ = ["COLOURS", "REPORT_FILE", "write_report"]
