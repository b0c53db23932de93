"""The code blocks of README.md and docs/*.md, as test_docs.py reads them.

A fenced block's info string is a language and flags, e.g. ```` ```sh run ````:

- `run`: the block is run, in page order, by bash (`set -euo pipefail`) or, for
  ```` ```python run ````, by python3.
- `background`: a runnable block that starts a server (what a reader runs in another
  terminal, such as `sluice serve`); the test starts it in the background and waits
  until every HOST:PORT the block names accepts connections.
- ```` ```text output ````: the output of the runnable block before it (its stdout),
  compared line by line after trailing blanks are stripped; a line that is `...` stands
  for any number of lines, and `...` inside a line for any text. With
  ```` ```text output unordered ```` the lines may come in any order (records of several
  partitions), and are compared as they are.

A shell block (sh, bash, shell, console) that is not `run` must be listed with a reason
in test_docs.py's EXEMPT.
"""

import re
from dataclasses import dataclass
from pathlib import Path

SHELL_LANGS = {"sh", "bash", "shell", "console"}
RUN_LANGS = SHELL_LANGS | {"python"}

_FENCE = re.compile(r"^(`{3,}|~{3,})\s*(.*)$")
# HOST:PORT in a background block, with or without PROTOCOL://.
_ADDRESS = re.compile(r"(?:[A-Za-z_]+://)?(\d{1,3}(?:\.\d{1,3}){3}|localhost):(\d{2,5})\b")


@dataclass
class Block:
    page: str
    line: int          # 1-based line of the opening fence
    lang: str
    flags: list
    text: str
    output: "Block | None" = None

    @property
    def runnable(self):
        return self.lang in RUN_LANGS and ("run" in self.flags or "background" in self.flags)

    @property
    def background(self):
        return "background" in self.flags

    @property
    def first_line(self):
        return next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")

    def where(self):
        return f"{self.page}:{self.line}"

    def addresses(self):
        """(host, port) of every HOST:PORT the block names, 0.0.0.0 as 127.0.0.1."""
        seen = []
        for host, port in _ADDRESS.findall(self.text):
            host = "127.0.0.1" if host in ("0.0.0.0", "localhost") else host
            if (host, int(port)) not in seen:
                seen.append((host, int(port)))
        return seen


def read_blocks(path, page):
    """Every fenced block of PATH, with `text output` blocks attached to the runnable
    block before them. A misplaced output block is an error."""
    lines = Path(path).read_text().split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2).split()
        j = i + 1
        while j < len(lines) and not (lines[j].startswith(fence) and not lines[j].strip(fence[0]).strip()):
            j += 1
        if j == len(lines):
            raise AssertionError(f"{page}:{i + 1}: unclosed code block")
        blocks.append(Block(page, i + 1, info[0] if info else "", info[1:], "\n".join(lines[i + 1:j]) + "\n"))
        i = j + 1
    attached = []
    for b in blocks:
        if b.lang == "text" and "output" in b.flags:
            prev = attached[-1] if attached else None
            if prev is None or not prev.runnable or prev.background or prev.output is not None:
                raise AssertionError(f"{b.where()}: an output block must follow a runnable block")
            prev.output = b
        else:
            attached.append(b)
    return attached


def _normalise(text):
    lines = [ln.rstrip() for ln in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def output_matches(output, actual):
    """Whether ACTUAL (a block's stdout) fits OUTPUT (its output block)."""
    expected = output.text
    if "unordered" in output.flags:
        return sorted(_normalise(expected)) == sorted(_normalise(actual))
    pattern = []
    for ln in _normalise(expected):
        if ln == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*".join(re.escape(part) for part in ln.split("...")) + r"\n")
    text = "".join(ln + "\n" for ln in _normalise(actual))
    return re.fullmatch("".join(pattern), text) is not None
