"""Thin surfaces over the one analysis: CLI, flake8 plugin, reporters, language server, file discovery, noqa."""
