"""Turning a summary into pages: report.html, report.md and junit.xml (`pages`), and how the
report writes numbers (`format`)."""
