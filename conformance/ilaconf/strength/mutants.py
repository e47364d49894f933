"""Mutants of our module's C sources for make mutation: one small change each.

The operators, each applied wherever it fits in code (never in comments,
strings or preprocessor lines):

    negate-cond   if (X)            -> if (!(X))
    relational    a > b             -> a >= b   (and >= >, < <=, <= <, == !=, != ==)
    constant      N                 -> N + 1, and 0 <-> 1
    delete-stmt   an expression statement (a call, an assignment) -> ;
    swap-args     f(a, b, ...)      -> f(b, a, ...)
    drop-flag     A | B             -> A, and -> B; true -> false in a call

A mutant is named FILE:SCOPE:OPERATOR:N (N counts that operator's mutants in
the function or initializer SCOPE), so that an edit elsewhere in the file
does not rename it: conformance/strength/equivalent-mutants.toml names the
mutants no case can kill, by these names.
"""

import re
from dataclasses import dataclass
from pathlib import Path

OPERATORS = ("negate-cond", "relational", "constant", "delete-stmt", "swap-args", "drop-flag")
RELATIONAL = {">": ">=", ">=": ">", "<": "<=", "<=": "<", "==": "!=", "!=": "=="}
# a relational operator, not part of ->, >>, <<, or an include
REL = re.compile(r"(?<![-<>=!])(>=|<=|==|!=|>|<)(?![<>=])")
NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
IF = re.compile(r"\bif \((.*)\)( \{)?$")
CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\(")
STATEMENT = re.compile(r"^\s+(?!return\b|goto\b|break\b|continue\b)([a-z_][\w\->.\[\]*]*\s*"
                       r"(\(|=[^=]|\+=|-=|\|=|&=|\+\+|--)).*;$")
DECLARATION = re.compile(r"^\s+(const |static |struct |enum |unsigned |signed |int |u8 |u16 |u32 |"
                         r"u64 |__be\d+ |__sum16 |__wsum |bool |char |long |size_t )")
SCOPE = re.compile(r"^[a-z].*?\b([a-z_][a-z0-9_]*)\s*(\(|\[|=)")


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str  # the file's name in kernel/ila
    line: int  # 1-based
    operator: str
    original: str
    mutated: str

    def apply(self, text: str) -> str:
        lines = text.split("\n")
        assert lines[self.line - 1] == self.original, f"{self.id}: the source changed"
        lines[self.line - 1] = self.mutated
        return "\n".join(lines)


def code_only(line: str) -> str:
    """The line with string literals and comments blanked, same length."""
    out = re.sub(r'"(\\.|[^"\\])*"', lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', line)
    out = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), out)
    at = out.find("//")
    if at >= 0:
        out = out[:at] + " " * (len(out) - at)
    return out


def top_level_args(text: str, start: int) -> list[tuple[int, int]] | None:
    """(start, end) of each argument of the call whose '(' is at start-1."""
    depth, args, begin = 0, [], start
    for i in range(start, len(text)):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append((begin, i))
                return args
            depth -= 1
        elif c == "," and depth == 0:
            args.append((begin, i))
            begin = i + 1
    return None  # the call goes on past this line


def line_mutants(code: str, raw: str) -> list[tuple[str, str]]:
    """(operator, mutated line) for one line of code."""
    out: list[tuple[str, str]] = []
    m = IF.search(code)
    if m:
        cond = raw[m.start(1):m.end(1)]
        out.append(("negate-cond", raw[:m.start(1)] + f"!({cond})" + raw[m.end(1):]))
    for m in REL.finditer(code):
        op = m.group(1)
        out.append(("relational", raw[:m.start(1)] + RELATIONAL[op] + raw[m.end(1):]))
    for m in NUMBER.finditer(code):
        n = int(m.group(1))
        for new in sorted({n + 1, 1 - n if n in (0, 1) else n + 1}):
            out.append(("constant", raw[:m.start(1)] + str(new) + raw[m.end(1):]))
    if STATEMENT.match(code) and not DECLARATION.match(code) and code.rstrip().endswith(";"):
        # an empty statement in its place: a braceless if keeps its body
        out.append(("delete-stmt", raw[:len(raw) - len(raw.lstrip())] + ";"))
    for m in CALL.finditer(code):
        if m.group(1) in ("if", "for", "while", "switch", "sizeof", "return"):
            continue
        args = top_level_args(code, m.end())
        if args and len(args) >= 2:
            (a0, a1), (b0, b1) = args[0], args[1]
            first, second = raw[a0:a1].strip(), raw[b0:b1].strip()
            if first != second:
                out.append(("swap-args", raw[:a0] + (" " if raw[a0] == " " else "") + second
                            + raw[a1:b0] + " " + first + raw[b1:]))
            for (s, e) in args:
                if code[s:e].strip() == "true":
                    out.append(("drop-flag", raw[:s] + raw[s:e].replace("true", "false") + raw[e:]))
    for m in re.finditer(r"([A-Z_][A-Z0-9_]*)\s*\|\s*([A-Z_][A-Z0-9_]*)", code):
        out.append(("drop-flag", raw[:m.start()] + m.group(1) + raw[m.end():]))
        out.append(("drop-flag", raw[:m.start()] + m.group(2) + raw[m.end():]))
    return out


def mutants_of(path: Path) -> list[Mutant]:
    lines = path.read_text().split("\n")
    out: list[Mutant] = []
    scope, counts = "file", {}
    in_comment = False
    ended = True  # the last line of code ended a statement: the next starts one
    for n, raw in enumerate(lines, 1):
        code = code_only(raw)
        if in_comment:
            end = code.find("*/")
            if end < 0:
                continue
            in_comment = False
            code = " " * (end + 2) + code[end + 2:]
        if "/*" in code:
            in_comment = True
            code = code[:code.index("/*")]
        stripped = code.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("*"):
            continue
        m = SCOPE.match(code)
        if m and not code.startswith((" ", "\t")):
            scope = m.group(1)
            if code.rstrip().endswith(";"):  # a prototype or a one-line definition
                continue
            if "(" in code and not code.rstrip().endswith("{"):
                continue  # a function's signature: its parameters are not code
        if code.startswith(("}", "{")) and len(stripped) <= 2:
            continue
        starts, ended = ended, stripped.endswith((";", "{", "}", ":")) or \
            bool(IF.search(code)) or stripped == "else"
        for op, mutated in line_mutants(code, raw):
            if op == "delete-stmt" and not starts:
                continue  # the tail of a statement that began on an earlier line
            key = (scope, op)
            counts[key] = counts.get(key, 0) + 1
            out.append(Mutant(f"{path.name}:{scope}:{op}:{counts[key]}", path.name, n, op,
                              raw, mutated))
    return out


def generate(src: Path) -> list[Mutant]:
    """Every mutant of the module's own sources (not tests/, not bench/)."""
    return [m for f in sorted(src.glob("*.c")) for m in mutants_of(f)]
