"""Mutants of our module's C sources for make mutation: one small change each.

The operators, each applied wherever it fits in code (never in comments,
strings or preprocessor lines):

    negate-cond   if (X)            -> if (!(X))
    relational    a > b             -> a >= b   (and >= >, < <=, <= <, == !=, != ==)
    constant      N                 -> N + 1, and 0 <-> 1
    delete-stmt   an expression statement (a call, an assignment) -> ;
    swap-args     f(a, b, ...)      -> f(b, a, ...)
    drop-flag     A | B             -> A, and -> B; true -> false in a call

and four shaped like the bugs implementers write (issue 37), each aimed at
a rule that holds for one part of a field, one protocol or one state:

    narrow        a == b on a 64-bit value or an address -> (u32)a == (u32)b
                  (its first 32 bits in memory on x86), ipv6_addr_equal(a, b)
                  -> ipv6_prefix_equal(a, b, 64)
    drop-conjunct if (A && B)        -> if (true && B), and -> if (A && true); || with
                  false; in a return's condition and a condition over lines too
    every-case    x == NAME          -> true, x != NAME -> false: a protocol's or
                  a type's special case applied to every case
    swap-state    CHECKSUM_PARTIAL   -> CHECKSUM_COMPLETE, and every other pair
                  of the skb checksum states

A mutant is named FILE:SCOPE:OPERATOR:KEY, KEY the first 8 hex digits of the
SHA-1 of its mutated line, stripped (with -2, -3 for a second and third
identical one in the same function): so that moving a line, or an edit
elsewhere in the function or the file, does not rename it.
conformance/strength/equivalent-mutants.toml names the mutants no case can
kill, by these names.
"""

import hashlib

import re
from dataclasses import dataclass
from pathlib import Path

OPERATORS = ("negate-cond", "relational", "constant", "delete-stmt", "swap-args", "drop-flag",
             "narrow", "drop-conjunct", "every-case", "swap-state")
# The kind of bug each operator stands for, for the score per kind.
KINDS = {"negate-cond": "syntactic", "relational": "syntactic", "constant": "syntactic",
         "delete-stmt": "syntactic", "swap-args": "syntactic", "drop-flag": "syntactic",
         "narrow": "narrowed comparison", "drop-conjunct": "rule applied to every case",
         "every-case": "rule applied to every case", "swap-state": "one checksum state"}
STATES = ("CHECKSUM_NONE", "CHECKSUM_UNNECESSARY", "CHECKSUM_COMPLETE", "CHECKSUM_PARTIAL")
# What a 64-bit value or an address looks like in the source: a cast to one,
# or a name the file declares with such a type (wide_names()).
WIDE_TYPES = re.compile(r"\b(__be64|u64|__u64|struct in6_addr)\s*\*?\s*([a-z_]\w*)?")
WIDE_CAST = re.compile(r"\((const )?(__be64|u64|struct in6_addr) \*\)")
EQUALITY = re.compile(r"(?<![-<>=!])(==|!=)(?!=)")
# A comparison's operand ends where an operator of lower precedence, a
# bracket of the enclosing expression or the statement does.
OPERAND_STOP = re.compile(r"&&|\|\||[?:,;]")
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
SCOPE = re.compile(r"^[a-z_].*?\b([a-z_][a-z0-9_]*)\s*(\(|\[|=)")


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


def wide_names(text: str) -> set[str]:
    """The names a source declares as 64-bit values or addresses (its
    variables, parameters and struct fields)."""
    return {m.group(2) for m in WIDE_TYPES.finditer(text) if m.group(2)}


def operand(code: str, at: int, step: int) -> int:
    """Where the operand of the comparison operator at @at ends, scanning
    from it by @step (-1 left, +1 right) over balanced brackets."""
    depth, i = 0, at
    while 0 <= i + step < len(code):
        j = i + step
        c = code[j]
        if c in ("([{" if step > 0 else ")]}"):
            depth += 1
        elif c in (")]}" if step > 0 else "([{"):
            if depth == 0:
                break
            depth -= 1
        elif depth == 0:
            two = code[j:j + 2] if step > 0 else code[j - 1:j + 1]
            if c in "?:,;" or two in ("&&", "||") or \
                    (c == "=" and code[j - 1] not in "=!<>" and code[j + 1:j + 2] != "="):
                break
        i = j
    return i


def last_name(expr: str) -> str:
    names = re.findall(r"[a-z_]\w*", expr)
    return names[-1] if names else ""


def top_level_terms(cond: str) -> list[tuple[int, int, str]]:
    """(start, end, the operator beside it) of each term of cond joined by
    && or || outside its brackets; a single term has none."""
    depth, cuts, i = 0, [], 0
    while i < len(cond):
        c = cond[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and cond[i:i + 2] in ("&&", "||"):
            cuts.append((i, cond[i:i + 2]))
            i += 2
            continue
        elif depth == 0 and c == "?":  # a ternary: its condition ends here
            cond = cond[:i]
            break
        i += 1
    terms, begin = [], 0
    for n, (at, op) in enumerate(cuts):
        terms.append((begin, at, op))
        begin = at + 2
    terms.append((begin, len(cond), cuts[-1][1] if cuts else ""))
    return [(a, b, op) for a, b, op in terms if cond[a:b].strip()]


def condition_span(code: str) -> tuple[int, int] | None:
    """The part of a line that is (part of) a condition: an if's, a return's,
    or a line inside a condition split over several lines (one that ends or
    starts with && or ||)."""
    m = IF.search(code)
    if m:
        return m.start(1), m.end(1)
    m = re.search(r"\breturn (.*);$", code)
    if m:
        return m.start(1), m.end(1)
    stripped = code.strip()
    if stripped.endswith(("&&", "||")) or stripped.startswith(("&&", "||")):
        # x = A &&, bool x = A &&, return A &&
        assign = re.match(r"\s*[\w\s*]*?\b\w+ = ", code) or re.match(r"\s*return ", code)
        start = code.find("if (") + 4 if "if (" in code else \
            assign.end() if assign else len(code) - len(code.lstrip())
        end = len(code.rstrip())
        tail = code[start:end]
        while tail.endswith((")", "{", " ")) and tail.count(")") > tail.count("("):
            tail = tail.rstrip(" {")
            tail = tail[:-1] if tail.endswith(")") and tail.count(")") > tail.count("(") else tail
        return start, start + len(tail)
    return None


def condition_mutants(code: str, raw: str, wide: set[str]) -> list[tuple[str, str]]:
    """The operators of issue 37 on one line."""
    out: list[tuple[str, str]] = []
    for m in EQUALITY.finditer(code):
        left, right = operand(code, m.start(), -1), operand(code, m.end() - 1, 1)
        kw = re.match(r"\s*(return|case)\b", code[left:m.start()])
        left += kw.end() if kw else 0
        a_raw, b_raw = raw[left:m.start()], raw[m.end():right + 1]
        a, b = a_raw.strip(), b_raw.strip()
        if not a or not b:
            continue
        # the comparison's own spaces stay where they were
        before, after = raw[:left] + a_raw[:len(a_raw) - len(a_raw.lstrip())], \
            b_raw[len(b_raw.rstrip()):] + raw[right + 1:]
        if last_name(a) in wide or last_name(b) in wide or WIDE_CAST.search(f"{a} {b}"):
            out.append(("narrow", f"{before}(u32)({a}) {m.group(1)} (u32)({b}){after}"))
        if re.fullmatch(r"[A-Z][A-Z0-9_]*", b):
            out.append(("every-case", f"{before}{'true' if m.group(1) == '==' else 'false'}{after}"))
    for m in re.finditer(r"\bipv6_addr_equal\(", code):
        args = top_level_args(code, m.end())
        if args and len(args) == 2:
            end = args[1][1]
            out.append(("narrow", f"{raw[:m.start()]}ipv6_prefix_equal({raw[m.end():end]}, 64)"
                                  f"{raw[end + 1:]}"))
    span = condition_span(code)
    if span:
        s, e = span
        terms = top_level_terms(code[s:e])
        if len(terms) > 1 or (terms and terms[0][2]):
            for t0, t1, op in terms:
                term = raw[s + t0:s + t1]
                pad = term[:len(term) - len(term.lstrip())]
                tail = term[len(term.rstrip()):]
                # the identity of its join: the term no longer decides
                out.append(("drop-conjunct", f"{raw[:s + t0]}{pad}{'true' if op == '&&' else 'false'}"
                                             f"{tail}{raw[s + t1:]}"))
    for m in re.finditer(r"\b(" + "|".join(STATES) + r")\b", code):
        for other in STATES:
            if other != m.group(1):
                out.append(("swap-state", raw[:m.start()] + other + raw[m.end():]))
    # one mutant per changed line: every-case on A == X && B is drop-conjunct's
    seen: set[str] = set()
    unique = []
    for op, line in out:
        key = " ".join(line.replace("(", " ( ").replace(")", " ) ").split())
        if key not in seen:
            seen.add(key)
            unique.append((op, line))
    return unique


def line_mutants(code: str, raw: str, wide: "set[str]" = frozenset()) -> list[tuple[str, str]]:
    """(operator, mutated line) for one line of code."""
    out: list[tuple[str, str]] = condition_mutants(code, raw, set(wide))
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
    text = path.read_text()
    lines, wide = text.split("\n"), wide_names(text)
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
        for op, mutated in line_mutants(code, raw, wide):
            if op == "delete-stmt" and not starts:
                continue  # the tail of a statement that began on an earlier line
            # a deleted statement's line is ';': its key is the line it deletes
            digest = hashlib.sha1((raw if op == "delete-stmt" else mutated).strip().encode())
            key = f"{path.name}:{scope}:{op}:{digest.hexdigest()[:8]}"
            counts[key] = counts.get(key, 0) + 1
            out.append(Mutant(key if counts[key] == 1 else f"{key}-{counts[key]}", path.name, n,
                              op, raw, mutated))
    return out


def generate(src: Path) -> list[Mutant]:
    """Every mutant of the module's own sources (not tests/, not bench/)."""
    return [m for f in sorted(src.glob("*.c")) for m in mutants_of(f)]
