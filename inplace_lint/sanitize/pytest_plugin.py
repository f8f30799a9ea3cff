"""pytest plugin: ``pytest --inplace-sanitize`` runs each test (setup, call and teardown) under the sanitizer.

Registered through the ``pytest11`` entry point ``inplace_lint.sanitize.pytest_plugin`` (named after this
module, so ``-p inplace_lint.sanitize.pytest_plugin`` is the same plugin). Without the option it does
nothing and never imports torch.

Options: ``--inplace-sanitize``; ``--inplace-sanitize-output FILE`` (default: the terminal summary);
``--inplace-sanitize-format text|json|sarif``; ``--inplace-sanitize-raise`` (the first hazardous write raises
``InplaceHazardError``, so that test fails); ``--inplace-sanitize-no-saved-tensors`` (no IPV006, for tests
using ``torch.func.grad``/``vjp``/``jacrev``). Findings do not change the session's exit status.
"""
from __future__ import annotations

from typing import Any, Generator

import pytest

FORMATS = ("text", "json", "sarif")  # the same as .report.FORMATS, without importing torch here


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("inplace-sanitize", "inplace-lint runtime sanitizer")
    group.addoption("--inplace-sanitize", action="store_true", default=False,
                    help="watch in-place writes made with grad on in every test and report hazards "
                         "(views of custom Function outputs, model outputs, saved tensors, ...)")
    group.addoption("--inplace-sanitize-output", metavar="FILE", default=None,
                    help="write the sanitizer report to FILE instead of the terminal summary")
    group.addoption("--inplace-sanitize-format", choices=FORMATS, default="text",
                    help="report format: text, json (as `inplace-lint check`), sarif")
    group.addoption("--inplace-sanitize-raise", action="store_true", default=False,
                    help="raise at the first hazardous write (the test fails)")
    group.addoption("--inplace-sanitize-no-saved-tensors", action="store_true", default=False,
                    help="no saved-tensor hooks (no IPV006), for tests that use torch.func.grad/vjp/jacrev")


class _SanitizePlugin:
    def __init__(self, config: pytest.Config):
        from .sanitizer import Sanitizer

        self.config = config
        self.sanitizer = Sanitizer(raise_on_finding=config.getoption("inplace_sanitize_raise"),
                                   saved_tensors=not config.getoption("inplace_sanitize_no_saved_tensors"))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, Any, None]:
        with self.sanitizer:
            yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, None]:
        with self.sanitizer:
            yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, Any, None]:
        with self.sanitizer:
            yield

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from .report import render

        output = self.config.getoption("inplace_sanitize_output")
        fmt = self.config.getoption("inplace_sanitize_format")
        if output:
            self.sanitizer.write_report(output, fmt)
            terminalreporter.write_line(f"inplace-lint sanitize: report written to {output}")
            return
        terminalreporter.section("inplace-lint sanitize")
        terminalreporter.write(render(self.sanitizer.findings, fmt))


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("inplace_sanitize", default=False):
        config.pluginmanager.register(_SanitizePlugin(config), "inplace-sanitize-session")
