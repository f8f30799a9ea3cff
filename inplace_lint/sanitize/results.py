"""What the sanitizer reports: :class:`RuntimeFinding` (as ``check``'s Finding), its messages, its error."""
from __future__ import annotations

import dataclasses

from ..findings import Finding, Origin, RootKind, WriteKind
from ..rules import PRIORITY


class InplaceHazardError(RuntimeError):
    """Raised before a hazardous in-place write when the sanitizer runs with ``raise_on_finding=True``."""


@dataclasses.dataclass
class RuntimeFinding:
    """One site the sanitizer saw: a code at the user's ``path:line``, how often it happened.

    ``line`` is 1-based and ``col`` 0-based in UTF-8 bytes, as ``ast`` and :class:`inplace_lint.findings.Finding`.
    """

    code: str
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    message: str
    op: str
    write_kind: WriteKind
    target: str
    count: int = 1

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"

    def to_finding(self) -> Finding:
        """The same :class:`~inplace_lint.findings.Finding` that ``check`` reports (message with the count)."""
        times = "once" if self.count == 1 else f"{self.count} times"
        return Finding(
            code=self.code, line=self.line, col=self.col, end_line=self.end_line, end_col=self.end_col,
            message=f"{self.message} (seen {times} at run time)", op=self.op, write_kind=self.write_kind,
            target=self.target, origin=Origin(RootKind.TENSOR, self.target, self.line),
        )

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col + 1}: {self.to_finding().text}"


def message_for(code: str, op: str, detail: str) -> str:
    write = f"in-place `{op}`"
    return {
        "IPV001": f"{write} on {detail} that its output object still holds: every later reader sees the change",
        "IPV002": f"{write} on a view made inside a custom autograd Function (or an input it returned as-is): "
                  "PyTorch forbids it; clone the Function's output or use an out-of-place op",
        "IPV003": f"{write} on one output of a multi-output view op (split/chunk/unbind): PyTorch forbids it; "
                  "use an out-of-place op",
        "IPV004": f"{write} on a tensor whose elements overlap in memory (e.g. after expand){detail}",
        "IPV005": f"{write}, with grad on, on a view made in no-grad mode: PyTorch forbids it; make the view "
                  "and the write in the same grad mode",
        "IPV006": f"{write} on a tensor that autograd saved for backward, in a graph that is still alive: "
                  f"backward() will fail{detail}",
    }[code]


CODE_ORDER = {rule.code: i for i, rule in enumerate(PRIORITY)}
