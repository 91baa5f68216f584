"""Jinja2 templates of the report (a package only so that setuptools ships the *.j2 files)."""
