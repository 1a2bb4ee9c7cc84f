"""The parser: tokens to a ``nodes.Module`` plus diagnostics. It never raises.

Grammar (words in quotes are contextual keywords; ``*`` repeats, ``[]`` is optional; commas
between list entries are optional wherever entries may also be separated by line breaks)::

    module       := decl*
    decl         := import | ["export"] (model | mcp | type | prompt | persona | intent
                                          | agent | tool | tools | group | workflow) | test
    import       := "import" "{" IDENT ("," IDENT)* "}" "from" STRING
    model        := "model" IDENT "{" entry* "}"
    mcp          := "mcp" IDENT "{" entry* "}" annotation*
    entry        := IDENT ":" value
    value        := term ("+" term)*
    term         := STRING | "{" prompt_item* "}" | "{" IDENT ":" ... "}" (object)
                  | IDENT ["(" [expr ("," expr)*] ")"] | NUMBER | "-" NUMBER | "true" | "false"
                  | "null" | "[" ... "]"
    type         := "type" IDENT "{" field* "}"
    field        := IDENT ["?"] ":" type_expr annotation*
    type_expr    := postfix ("|" postfix)*
    postfix      := primary ("[" "]")*
    primary      := "string" | "number" | "boolean" | "Text" | IDENT | STRING
                  | "{" field* "}" | "(" type_expr ")"
    annotation   := "@desc" STRING | "@example" "(" [IDENT "=" expr ("," IDENT "=" expr)*] ")"
                  | "@repeatable"
                  | "@approval" ["(" [IDENT "=" expr ("," IDENT "=" expr)*] ")"]
                  | "@mcp" "(" IDENT ["," STRING] ")"
                  | "@untrusted" | "@trusted" | "@quarantine"
                  | "@sensitive" ["(" [IDENT "=" expr ("," IDENT "=" expr)*] ")"]
                  | "@maxOutput" "(" (NUMBER | IDENT "=" expr) ")"
    prompt       := "prompt" IDENT ["(" params ")"] "{" prompt_item* "}"
    persona      := "persona" IDENT "{" prompt_item* "}"
    test         := "test" STRING "{" test_item* "}"
    test_item    := IDENT ":" value | "model" "{" reply* "}" | "tools" "{" (IDENT ":" expr)* "}"
                  | "expect" "{" expectation* "}"
    reply        := "call" IDENT "(" named_args ")" | "say" STRING | "output" expr
    expectation  := ["not"] "called" IDENT ["(" named_args ")"] | "text" "contains" STRING
                  | "output" expr | "error" ["contains" STRING] | "intent" IDENT [expr]
    named_args   := [IDENT "=" expr ("," IDENT "=" expr)*]
    params       := [field ("," field)*]
    prompt_item  := STRING | ("Example" | "example") "{" ("user" | "assistant") ":" STRING ... "}"
                  | "if" "(" expr ")" "{" branch_item* "}" ["else" ("{" branch_item* "}" | if)]
    branch_item  := "return" STRING | prompt_item
    intent       := "intent" IDENT "{" intent_item* "}"
    intent_item  := "description" ":" STRING | "fields" "{" field* "}"
    agent        := ("agent" | "helper") IDENT "{" member* "}"
    member       := "default" "config" "{" entry* "}" | "config" IDENT "{" entry* "}"
                  | "context" "{" field* "}" | "input" ":" type_expr | "output" ":" type_expr
                  | tool | tools | workflow | "helpers" "{" helper_use* "}"
                  | "personas" "{" IDENT ("," IDENT)* "}"
                  | "intent" ":" intent_term ("+" intent_term)*
                  | "description" ":" STRING
    intent_term  := IDENT | "{" (IDENT "{" intent_item* "}")* "}"
    tool         := "tool" signature
    tools        := "tools" "{" (signature | IDENT)* "}"     (IDENT: a tool group used here)
    group        := "tools" IDENT "{" signature* "}"
    signature    := ["tool"] IDENT "(" params ")" ":" type_expr annotation*
    workflow     := "workflow" IDENT "(" params ")" [":" type_expr] "{" wf_item* "}" annotation*
    wf_item      := "description" ":" STRING | tool | tools | stmt
    helper_use   := IDENT ["with" ("all" "tools" | "tools" "{" IDENT ("," IDENT)* "}")]
                    ["handoff" "user" ["then" "continue"]] annotation*
    stmt         := "let" IDENT "=" expr | IDENT "=" expr | "return" [expr] | expr
                  | "if" "(" expr ")" "{" stmt* "}" ["else" ("{" stmt* "}" | if)]
    expr         := and ("||" and)*        and := equality ("&&" equality)*
    equality     := compare (("==" | "!=") compare)*
    compare      := sum (("<" | "<=" | ">" | ">=") sum)*
    sum          := product (("+" | "-") product)*
    product      := unary (("*" | "/" | "%") unary)*
    unary        := ("!" | "-") unary | postfix_expr
    postfix_expr := atom ("." IDENT | "[" expr "]" | "(" args ")")*   (a call needs a bare name)
    atom         := NUMBER | STRING | "true" | "false" | "null" | "ctx" "." IDENT | IDENT
                  | "[" [expr ("," expr)*] "]" | "{" [key ":" expr ("," key ":" expr)*] "}"
                  | "(" expr ")"

Statements end at a line break; a ``(`` or ``[`` on a new line starts a new statement.

Strings in prompt positions (prompt bodies, ``Example`` blocks, config values) are parsed
again as templates by ``_TemplateParser``: ``{{expr}}``, ``{{#if expr}}...{{else}}...{{/if}}``
and ``{{@schema(input|output|context)}}``, where ``expr`` is the ``expr`` above, lexed from the
string's processed characters with spans mapped back into the file.

Recovery: an error unwinds to the nearest member or declaration, which skips to the next line
that starts a member or declaration (balancing braces), so one mistake does not hide the next.
A block still open when a line starts a top-level declaration is closed with one ``E0101``.
Nesting deeper than ``MAX_DEPTH`` is ``E0109`` rather than a blown Python stack.

Speed: the parser reads the lexer's token columns by index (``self.kinds[self.pos]``), builds a
``Token`` only for messages and rare paths (``peek``, ``advance``) and reads token kinds as
module globals. Parsing the bench project (80 files, 43,500 tokens, 34,000 nodes) costs about
370 M instructions, two thirds of them the interpreter's own loop; a node costs about 2,000
instructions and a ``Span`` 1,000. (Building nodes without calling their class, by giving a
mutable twin its class afterwards, saved 5% of parsing; it was left out, because the parser's
node constructions would no longer be type-checked.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal, TypeVar

from . import nodes as n
from .diagnostics import Diagnostic, Note, did_you_mean, error
from .lexer import Token, TokenKind, Tokens, lex, tokenize_fragment
from .source import SourceFile, Span

T = TypeVar("T")


# The token kinds as module globals: the parser reads one or more per token, and in Python
# 3.11 a global is read through a specialised cache, where an attribute of the enum (or of
# a class holding the kinds) costs a type lookup each time.
IDENT: Final = TokenKind.IDENT
NUMBER: Final = TokenKind.NUMBER
STRING: Final = TokenKind.STRING
LBRACE: Final = TokenKind.LBRACE
RBRACE: Final = TokenKind.RBRACE
LPAREN: Final = TokenKind.LPAREN
RPAREN: Final = TokenKind.RPAREN
LBRACKET: Final = TokenKind.LBRACKET
RBRACKET: Final = TokenKind.RBRACKET
COLON: Final = TokenKind.COLON
COMMA: Final = TokenKind.COMMA
DOT: Final = TokenKind.DOT
AT: Final = TokenKind.AT
PLUS: Final = TokenKind.PLUS
MINUS: Final = TokenKind.MINUS
STAR: Final = TokenKind.STAR
SLASH: Final = TokenKind.SLASH
PERCENT: Final = TokenKind.PERCENT
ASSIGN: Final = TokenKind.ASSIGN
EQ: Final = TokenKind.EQ
NE: Final = TokenKind.NE
LT: Final = TokenKind.LT
LE: Final = TokenKind.LE
GT: Final = TokenKind.GT
GE: Final = TokenKind.GE
AND: Final = TokenKind.AND
OR: Final = TokenKind.OR
BANG: Final = TokenKind.BANG
PIPE: Final = TokenKind.PIPE
QUESTION: Final = TokenKind.QUESTION
HASH: Final = TokenKind.HASH
EOF: Final = TokenKind.EOF


DECL_WORDS = (
    "import",
    "export",
    "model",
    "mcp",
    "type",
    "prompt",
    "persona",
    "intent",
    "agent",
    "helper",
)
_ALL_DECL_WORDS = (*DECL_WORDS, "tool", "tools", "workflow", "test")
_MEMBER_WORDS = (
    "default",
    "config",
    "context",
    "input",
    "output",
    "tool",
    "tools",
    "workflow",
    "helpers",
    "personas",
    "intent",
    "description",
)
#: The members of an agent or helper as they start (the E0103 message, editors' completion).
MEMBER_SYNTAX = (
    "default config",
    "config",
    "context",
    "input:",
    "output:",
    "tool",
    "tools",
    "workflow",
    "helpers",
    "personas",
    "intent:",
    "description:",
)
_MEMBER_LIST = ", ".join(f"`{m}`" for m in MEMBER_SYNTAX)
_PRIMITIVES = ("string", "number", "boolean")
_ANNOTATIONS = (
    "@desc",
    "@example",
    "@repeatable",
    "@approval",
    "@untrusted",
    "@trusted",
    "@sensitive",
    "@quarantine",
    "@mcp",
    "@maxOutput",
)
_ANNOTATION_LIST = ", ".join(f"`{a}`" for a in _ANNOTATIONS[:-1]) + f" or `{_ANNOTATIONS[-1]}`"
# Tokens after a word that make a type or an expression more than that word.
_TYPE_CONTINUES = frozenset((PIPE, LBRACKET))
_ATOM_CONTINUES = frozenset((LBRACKET, LPAREN))
# Binding power of each binary operator: higher binds tighter.
_BINDING: dict[TokenKind, int] = {
    OR: 1,
    AND: 2,
    EQ: 3,
    NE: 3,
    LT: 4,
    LE: 4,
    GT: 4,
    GE: 4,
    PLUS: 5,
    MINUS: 5,
    STAR: 6,
    SLASH: 6,
    PERCENT: 6,
}


MAX_DEPTH = 64
# Operator chains (`a + b + c`), member chains (`x.a.b`), index chains and array types
# (`T[][]`) are read by loops, not recursion, but each link is one more level of the tree
# that the checker, the lowering and the runtime walk recursively. Past this many links on
# one path the file is refused with E0109 instead of blowing their stack later.
MAX_LINKS = 200
_OPENERS = (LBRACE, LPAREN, LBRACKET)
_CLOSERS = {RBRACE: LBRACE, RPAREN: LPAREN, RBRACKET: LBRACKET}
# Words that start a statement or a member: where skipping stops inside an unclosed `(`.
_RESUME_WORDS = frozenset(
    ("let", "return", "if", "tool", "tools", "workflow", "description", "default", "config")
    + ("context", "input", "output", "helpers", "intent", "model", "prompt", "embedding")
    + ("personas",)
)


class _OpenBrackets:
    """Brackets opened and not yet closed, innermost last, with a count of each kind, so
    that "is a `{` open?" costs the same however many are open (recovery asks it per line)."""

    __slots__ = ("kinds", "counts")

    def __init__(self) -> None:
        self.kinds: list[TokenKind] = []
        self.counts = dict.fromkeys(_OPENERS, 0)

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def has(self, opener: TokenKind) -> bool:
        return self.counts[opener] > 0

    def add(self, kind: TokenKind) -> None:
        """Open ``kind``, or close what a closer ``kind`` matches (nothing if none is open)."""
        if kind in _OPENERS:
            self.kinds.append(kind)
            self.counts[kind] += 1
        elif kind in _CLOSERS:
            self.close(_CLOSERS[kind])

    def close(self, opener: TokenKind) -> bool:
        """Close down to and including ``opener``; False (untouched) if it is not open."""
        if not self.counts[opener]:
            return False
        while True:
            kind = self.kinds.pop()
            self.counts[kind] -= 1
            if kind is opener:
                return True


class _Bail(Exception):
    """Unwinds to the nearest recovery point after a diagnostic was reported."""


class _Parser:
    """A cursor over tokens with ``peek`` / ``eat`` / ``expect``; ``expect`` writes messages."""

    def __init__(self, source: SourceFile, tokens: Tokens, diagnostics: list[Diagnostic]) -> None:
        self.source = source
        self.tokens = tokens
        # The token columns (see lexer.Tokens): the hot paths read these by index; peek()
        # and the other methods that return a Token build one, for the rest.
        self.kinds = tokens.kinds
        self.texts = tokens.texts
        self.starts = tokens.starts
        self.ends = tokens.ends
        self.newlines = tokens.newlines
        self.values = tokens.values
        self.last = len(tokens) - 1  # the EOF token
        self.pos = 0
        self.diagnostics = diagnostics
        # Open blocks, innermost last: (what, where it opened) for "still open" notes.
        self.blocks: list[tuple[str, Span]] = []
        self.depth = 0
        self.links = 0  # chain links on the current path, see MAX_LINKS
        self.too_deep = False

    # ---------------------------------------------------------------- cursor

    def peek(self, ahead: int = 0) -> Token:
        index = self.pos + ahead
        return self.tokens.token(index if index < self.last else self.last)

    def kind(self, ahead: int) -> TokenKind:
        """The kind of the token ``ahead`` places on (``peek(ahead).kind``, without a Token)."""
        index = self.pos + ahead
        return self.kinds[index if index < self.last else self.last]

    def span(self, index: int) -> Span:
        """The span of token ``index``."""
        return Span(self.starts[index], self.ends[index])

    def advance(self) -> Token:
        token = self.tokens.token(self.pos)
        if token.kind is not EOF:
            self.pos += 1
        return token

    def advance_span(self) -> Span:
        """``advance().span``, without building the token."""
        pos = self.pos
        if self.kinds[pos] is not EOF:
            self.pos = pos + 1
        return Span(self.starts[pos], self.ends[pos])

    def skip(self) -> None:
        """``advance`` where the token is not needed."""
        if self.kinds[self.pos] is not EOF:
            self.pos += 1

    def at(self, kind: TokenKind) -> bool:
        return self.kinds[self.pos] is kind

    def at_word(self, *words: str) -> bool:
        return self.kinds[self.pos] is IDENT and self.texts[self.pos] in words

    # eat, expect and expect_name are called once every few tokens: they test and advance
    # inline rather than through at() and advance(). Only EOF is never consumed.

    def eat(self, kind: TokenKind) -> bool:
        if self.kinds[self.pos] is not kind:
            return False
        if kind is not EOF:
            self.pos += 1
        return True

    def eat_word(self, word: str) -> Token | None:
        pos = self.pos
        if self.kinds[pos] is IDENT and self.texts[pos] == word:
            self.pos += 1
            return self.tokens.token(pos)
        return None

    def since(self, start: Span) -> Span:
        """The span from ``start`` to the end of the last consumed token."""
        end = self.ends[self.pos - 1] if self.pos else 0
        return Span(start.start, end if end > start.end else start.end)

    # ---------------------------------------------------------------- errors

    def report(
        self,
        code: str,
        message: str,
        span: Span,
        *,
        help: str | None = None,
        notes: tuple[Note, ...] = (),
    ) -> None:
        self.diagnostics.append(error(code, message, self.source, span, notes=notes, help=help))

    def open_note(self) -> tuple[Note, ...]:
        if not self.blocks:
            return ()
        what, span = self.blocks[-1]
        return (Note(f"while parsing {what}, opened here", span),)

    def fail(self, expected: str, *, code: str = "E0100", help: str | None = None) -> _Bail:
        """Report ``expected X, found Y`` at the current token and return the bail-out."""
        token = self.peek()
        if self.after_broken_string():
            return _Bail()  # the lexer already reported the cause; this is only its echo
        self.report(
            code,
            f"expected {expected}, found {token.describe()}",
            token.span,
            help=help,
            notes=self.open_note(),
        )
        return _Bail()

    def after_broken_string(self) -> bool:
        """True right after an unterminated string, whose missing quote ate the rest of the line."""
        if self.pos == 0:
            return False
        if self.kinds[self.pos - 1] is not STRING:
            return False
        raw = self.texts[self.pos - 1]
        quote = '"""' if raw.startswith('"""') else raw[0]
        return len(raw) < 2 * len(quote) or not raw.endswith(quote)

    def expect(self, kind: TokenKind, expected: str | None = None) -> None:
        if self.kinds[self.pos] is kind:
            if kind is not EOF:
                self.pos += 1
            return
        raise self.fail(expected or f"`{kind.value}`")

    def expect_word(self, word: str) -> Token:
        if self.at_word(word):
            return self.advance()
        raise self.fail(f"`{word}`")

    def expect_name(self, what: str) -> n.Name:
        pos = self.pos
        if self.kinds[pos] is IDENT:
            self.pos = pos + 1
            return n.Name(self.texts[pos], Span(self.starts[pos], self.ends[pos]))
        raise self.fail(what)

    def expect_same_line_name(self, what: str) -> n.Name:
        """A name that must follow on the same line (after ``.``), not start the next one."""
        if self.newlines[self.pos]:
            raise self.fail(what)
        return self.expect_name(what)

    def expect_string(self, what: str) -> n.StringLit:
        value = self.values[self.pos]
        if self.kinds[self.pos] is STRING and isinstance(value, n.StringLit):
            self.pos += 1
            return value
        raise self.fail(what)

    # ---------------------------------------------------------------- blocks and recovery

    def block(
        self,
        what: str,
        opener: Span,
        item: Callable[[], T],
        *,
        stop: Callable[[], bool] | None = None,
    ) -> tuple[list[T], Span]:
        """Parse ``{ item* }`` after the keyword(s) at ``opener``; recovers per item.

        ``stop`` says when a token inside the block most likely starts something outside it (a
        missing ``}``): the block then ends with a diagnostic instead of swallowing the file.
        """
        self.expect(LBRACE, f"`{{` to open {what}")
        # Brackets opened in the block and not yet closed, known up to token `scanned`:
        # each recovery scans only what was read since the last one (linear in the block).
        # Made at the first recovery: most blocks have none.
        brackets: _OpenBrackets | None = None
        scanned = self.pos
        self.deeper()
        self.blocks.append((what, opener))
        items: list[T] = []
        kinds = self.kinds
        try:
            while kinds[self.pos] is not RBRACE:
                if kinds[self.pos] is EOF or (stop is not None and stop()):
                    self.unclosed(what, opener)
                    return items, self.since(opener)
                start = self.pos
                try:
                    result = item()
                except _Bail:
                    if brackets is None:
                        brackets = _OpenBrackets()
                    self.recover(stop, brackets, scanned, progressed=self.pos > start)
                    scanned = self.pos
                    continue
                items.append(result)
                if kinds[self.pos] is COMMA:
                    self.pos += 1
                if self.pos == start:  # an item parser must always make progress
                    raise self.fail(f"an entry of {what}")
            self.pos += 1  # the `}`
        finally:
            self.blocks.pop()
            self.depth -= 1
        return items, self.since(opener)

    def deeper(self) -> None:
        """Count one level of nesting; refuse input nested deeper than ``MAX_DEPTH``.

        Without this limit a file of ten thousand ``(`` would exhaust Python's stack.
        """
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.depth -= 1
            if not self.too_deep:
                self.too_deep = True
                token = self.peek()
                self.report(
                    "E0109",
                    f"nesting is too deep (more than {MAX_DEPTH} levels)",
                    token.span,
                    help="split the expression or the type into named parts",
                )
            raise _Bail()

    def link(self) -> None:
        """Count one chain link (see ``MAX_LINKS``); the caller restores ``links``."""
        self.links += 1
        if self.links > MAX_LINKS:
            self.links -= 1
            if not self.too_deep:
                self.too_deep = True
                self.report(
                    "E0109",
                    f"this chain of operators or fields is too long (more than {MAX_LINKS})",
                    self.peek().span,
                    help="split it into `let` steps or named parts",
                )
            raise _Bail()

    def unclosed(self, what: str, opener: Span) -> None:
        token = self.peek()
        last = self.diagnostics[-1] if self.diagnostics else None
        if last is not None and last.code == "E0101" and last.span == token.span:
            # An inner block already reported this token: one message, one note per block.
            note = Note(f"{what}, opened here, is not closed either", opener)
            self.diagnostics[-1] = last.with_notes((*last.notes, note))
            return
        self.report(
            "E0101",
            f"expected `}}` to close {what}, found {token.describe()}",
            token.span,
            notes=(Note(f"{what} opened here", opener),),
            help="add the missing `}`",
        )

    def recover(
        self,
        stop: Callable[[], bool] | None,
        stack: _OpenBrackets,
        scanned: int,
        *,
        progressed: bool,
    ) -> None:
        """Skip to the next line that can start an item of the current block, or its ``}``.

        Brackets opened inside the block before the error (an option object, an argument list)
        are closed first, so that their ``}`` is not mistaken for the block's own. Inside
        parentheses or brackets only, a line that starts with a statement or member keyword
        ends the skip: the likely mistake is a missing ``)`` on the line before. ``stack``
        holds the brackets still open at token ``scanned``; it is brought up to date and left
        matching the position where the skip stops.
        """
        self.unclosed_brackets(stack, scanned)
        # The failed item consumed something, so stopping at once still makes progress.
        first = not progressed
        while not self.at(EOF):
            token = self.peek()
            kind = token.kind
            if not first and token.newline_before and kind is IDENT:
                if not stack or (not stack.has(LBRACE) and self.resumes_line(token)):
                    return
            elif not first and not stack and stop is not None and stop():
                return
            if kind is RBRACE and not stack.has(LBRACE):
                return  # the block's own closing brace
            stack.add(kind)
            self.skip()
            first = False

    def resumes_line(self, token: Token) -> bool:
        """Whether a line starting with ``token`` looks like a new statement, member or field."""
        after = self.kind(1)
        return token.text in _RESUME_WORDS or after is COLON or after is QUESTION

    def unclosed_brackets(self, stack: _OpenBrackets, scanned: int) -> None:
        """Add to ``stack`` the brackets opened from token ``scanned`` to here, less those
        closed."""
        for kind in self.kinds[scanned : self.pos]:
            stack.add(kind)

    def starts_declaration(self) -> bool:
        """True at a line-leading word that can only begin a top-level declaration."""
        pos = self.pos
        if self.kinds[pos] is not IDENT or not self.newlines[pos]:
            return False
        text = self.texts[pos]
        if text in ("agent", "helper", "import", "export", "type", "prompt", "persona"):
            return self.kind(1) is IDENT or text in ("import", "export")
        if text in ("model", "mcp", "intent", "tools"):
            return self.kind(1) is IDENT and self.kind(2) is LBRACE
        if text == "test":
            return self.kind(1) is STRING and self.kind(2) is LBRACE
        return False

    # ---------------------------------------------------------------- module

    def parse_module(self) -> n.Module:
        decls: list[n.Decl] = []
        while not self.at(EOF):
            start = self.pos
            try:
                decls.append(self.parse_decl())
            except _Bail:
                self.skip_to_declaration()
            if self.pos == start:
                self.skip()
        return n.Module(self.source, tuple(decls), Span(0, len(self.source.text)))

    def skip_to_declaration(self) -> None:
        self.skip()
        while not self.at(EOF):
            token = self.peek()
            if self.starts_declaration():
                return
            if token.newline_before and token.kind is IDENT and token.text in _ALL_DECL_WORDS:
                if self.source.line_col(token.span.start)[1] == 1:
                    return
            self.skip()

    def parse_decl(self) -> n.Decl:
        if self.at_word("import"):
            return self.parse_import()
        export = self.eat_word("export")
        export_span = export.span if export else None
        token = self.peek()
        word = token.text if token.kind is IDENT else ""
        parse = _DECL_PARSERS.get(word)
        if parse is None:
            if token.kind is RBRACE:
                self.report(
                    "E0102",
                    "unexpected `}`: no block is open here",
                    token.span,
                    help="remove it, or look for a `}` too many in the block above",
                )
                raise _Bail()
            if word in _MEMBER_WORDS:
                self.report(
                    "E0102",
                    f"`{'default config' if word == 'default' else word}` can only appear "
                    "inside an `agent` or `helper` block",
                    token.span,
                    help="move it into the agent's `{ ... }`",
                )
                raise _Bail()
            if word == "import" and export:
                raise self.fail("a declaration after `export`", help="imports cannot be exported")
            raise self.fail(
                "a declaration (`agent`, `helper`, `model`, `mcp`, `type`, `prompt`, `persona`, "
                "`intent`, `tool`, `tools`, `workflow` or `import`)",
                code="E0102",
                help=did_you_mean(word, _ALL_DECL_WORDS) if word else None,
            )
        return parse(self, export_span)

    def parse_import(self) -> n.ImportDecl:
        keyword = self.advance_span()
        self.expect(LBRACE, "`{` after `import`")
        names: list[n.Name] = []
        while not self.at(RBRACE):
            names.append(self.expect_name("a name to import"))
            if not self.eat(COMMA):
                break
        self.expect(RBRACE, "`,` or `}` in the import list")
        self.expect_word("from")
        path = self.expect_string('the path to import from, e.g. "./models"')
        return n.ImportDecl(tuple(names), path, self.since(keyword))

    def parse_model(self, export: Span | None) -> n.ModelDecl:
        keyword = self.advance_span()
        name = self.expect_name("a model name after `model`")
        entries, span = self.block(
            f"`model {name.text}`", keyword, self.parse_entry, stop=self.starts_declaration
        )
        return n.ModelDecl(name, tuple(entries), self.with_export(export, span), export)

    def parse_mcp(self, export: Span | None) -> n.McpDecl:
        keyword = self.advance_span()
        name = self.expect_name("a server name after `mcp`")
        entries, span = self.block(
            f"`mcp {name.text}`", keyword, self.parse_entry, stop=self.starts_declaration
        )
        annotations = self.trailing_annotations()
        span = self.since(span) if annotations else span
        return n.McpDecl(name, tuple(entries), self.with_export(export, span), export, annotations)

    def trailing_annotations(self) -> tuple[n.Annotation, ...]:
        """Annotations after a declaration's closing brace, on the same line."""
        if self.at(AT) and not self.newlines[self.pos]:
            return self.parse_annotations()
        return ()

    def with_export(self, export: Span | None, span: Span) -> Span:
        return Span(export.start, span.end) if export else span

    def parse_type_decl(self, export: Span | None) -> n.TypeDecl:
        keyword = self.advance_span()
        name = self.expect_name("a type name after `type`")
        fields, span = self.block(
            f"`type {name.text}`", keyword, self.parse_field, stop=self.starts_declaration
        )
        return n.TypeDecl(name, tuple(fields), self.with_export(export, span), export)

    def parse_prompt(self, export: Span | None) -> n.PromptDecl:
        keyword = self.advance_span()
        name = self.expect_name("a prompt name after `prompt`")
        params = self.parse_params() if self.at(LPAREN) else None
        items, span = self.block(
            f"`prompt {name.text}`",
            keyword,
            self.parse_prompt_item,
            stop=self.starts_declaration,
        )
        return n.PromptDecl(name, params, tuple(items), self.with_export(export, span), export)

    def parse_persona(self, export: Span | None) -> n.PersonaDecl:
        keyword = self.advance_span()
        name = self.expect_name("a persona name after `persona`")
        items, span = self.block(
            f"`persona {name.text}`",
            keyword,
            self.parse_prompt_item,
            stop=self.starts_declaration,
        )
        return n.PersonaDecl(name, tuple(items), self.with_export(export, span), export)

    def parse_intent_decl(self, export: Span | None) -> n.IntentDecl:
        keyword = self.advance_span()
        decl = self.parse_intent_body(keyword, self.expect_name("an intent name"))
        return n.IntentDecl(
            decl.name, decl.description, decl.fields, self.with_export(export, decl.span), export
        )

    def parse_intent_body(self, opener: Span, name: n.Name) -> n.IntentDecl:
        description: list[n.DescriptionEntry] = []
        fields: list[n.Field] = []

        def item() -> None:
            if self.at_word("description") and self.kind(1) is COLON:
                self.add_description(description, f"`intent {name.text}`")
            elif self.at_word("fields"):
                keyword = self.advance_span()
                found, _ = self.block("`fields`", keyword, self.parse_field)
                fields.extend(found)
            else:
                raise self.fail("`description:` or `fields { ... }` in an intent")

        _, span = self.block(f"`intent {name.text}`", opener, item, stop=self.starts_declaration)
        return n.IntentDecl(name, description[0] if description else None, tuple(fields), span)

    def add_description(self, found: list[n.DescriptionEntry], where: str) -> None:
        """Parse ``description: "..."`` into ``found``; a second one is reported, not kept."""
        entry = self.parse_description()
        if found:
            self.report(
                "E0107",
                f"{where} has more than one `description`",
                entry.span,
                notes=(Note("the first one is here", found[0].span),),
                help="keep one description",
            )
        else:
            found.append(entry)

    # ---------------------------------------------------------------- agents and helpers

    def parse_agent(self, export: Span | None) -> n.AgentDecl:
        keyword = self.advance()
        kind: Literal["agent", "helper"] = "agent" if keyword.text == "agent" else "helper"
        name = self.expect_name(f"a name after `{kind}`")
        what = f"`{kind} {name.text}`"
        members, span = self.block(
            what, keyword.span, lambda: self.parse_member(what), stop=self.starts_declaration
        )
        annotations = self.trailing_annotations()
        span = self.since(span) if annotations else span
        return n.AgentDecl(
            kind, name, tuple(members), self.with_export(export, span), export, annotations
        )

    def parse_member(self, where: str) -> n.AgentMember:
        pos = self.pos
        word = self.texts[pos] if self.kinds[pos] is IDENT else ""
        if word == "default":
            self.skip()
            self.expect_word("config")
            return self.parse_config_block(self.span(pos), None)
        if word == "config":
            self.skip()
            name = self.expect_name("a config name after `config` (or write `default config`)")
            return self.parse_config_block(self.span(pos), name)
        if word in _MEMBER_PARSERS:
            return _MEMBER_PARSERS[word](self)
        if word in ("model", "prompt", "embedding") and self.kind(1) is COLON:
            raise self.fail(
                f"a member of {where}",
                code="E0103",
                help=f"`{word}:` belongs inside `default config {{ ... }}` or a named config",
            )
        raise self.fail(
            f"a member of {where} ({_MEMBER_LIST})",
            code="E0103",
            help=did_you_mean(word, (*_MEMBER_WORDS, "default config")) if word else None,
        )

    def parse_config_block(self, opener: Span, name: n.Name | None) -> n.ConfigBlock:
        what = "`default config`" if name is None else f"`config {name.text}`"
        entries, span = self.block(what, opener, self.parse_entry, stop=self.starts_declaration)
        return n.ConfigBlock(name, tuple(entries), span)

    def parse_context(self) -> n.ContextBlock:
        keyword = self.advance_span()
        fields, span = self.block("`context`", keyword, self.parse_field)
        return n.ContextBlock(tuple(fields), span)

    def parse_input(self) -> n.InputDecl:
        keyword = self.advance_span()
        self.expect(COLON, "`:` after `input`")
        return n.InputDecl(self.parse_type(), self.since(keyword))

    def parse_output(self) -> n.OutputDecl:
        keyword = self.advance_span()
        self.expect(COLON, "`:` after `output`")
        return n.OutputDecl(self.parse_type(), self.since(keyword))

    def parse_description(self) -> n.DescriptionEntry:
        keyword = self.advance_span()
        self.expect(COLON, "`:` after `description`")
        text = self.expect_string("a description string")
        return n.DescriptionEntry(text, self.since(keyword))

    def parse_helpers(self) -> n.HelpersBlock:
        keyword = self.advance_span()
        uses, span = self.block("`helpers`", keyword, self.parse_helper_use)
        return n.HelpersBlock(tuple(uses), span)

    def parse_personas(self) -> n.PersonasBlock:
        keyword = self.advance_span()
        self.expect(LBRACE, "`{` after `personas`")
        names: list[n.Name] = []
        while not self.at(RBRACE):
            names.append(self.expect_name("a persona name"))
            if not self.eat(COMMA) and not self.newlines[self.pos]:
                break
        self.expect(RBRACE, "`,` or `}` in the `personas` list")
        return n.PersonasBlock(tuple(names), self.since(keyword))

    def parse_helper_use(self) -> n.HelperUse:
        name = self.expect_name("a helper name")
        grant: n.ToolGrant = n.ToolGrantNone()
        handoff: n.Handoff = "none"
        if self.at_word("with") and not self.newlines[self.pos]:
            grant = self.parse_grant()
        if self.at_word("handoff") and not self.newlines[self.pos]:
            self.skip()
            self.expect_word("user")
            handoff = "user"
            if self.at_word("then") and not self.newlines[self.pos]:
                self.skip()
                self.expect_word("continue")
                handoff = "user_then_continue"
        annotations = () if self.newlines[self.pos] else self.parse_annotations()
        token = self.peek()
        if not token.newline_before and token.kind not in (RBRACE, COMMA, EOF):
            word = token.text if token.kind is IDENT else ""
            raise self.fail(
                "`with all tools`, `with tools { ... }`, `handoff user`, `@approval` or a line "
                f"break after helper `{name.text}`",
                code="E0106",
                help=did_you_mean(word, ("with", "handoff")) if word else None,
            )
        return n.HelperUse(name, grant, handoff, self.since(name.span), annotations)

    def parse_grant(self) -> n.ToolGrant:
        keyword = self.advance_span()
        if self.eat_word("all"):
            self.expect_word("tools")
            return n.ToolGrantAll(self.since(keyword))
        if not self.at_word("tools"):
            word = self.peek().text if self.at(IDENT) else ""
            raise self.fail(
                "`all tools` or `tools { ... }` after `with`",
                code="E0106",
                help=did_you_mean(word, ("all", "tools")) if word else None,
            )
        opener = self.advance_span()
        names, _ = self.block(
            "`with tools`", opener, lambda: self.expect_name("a tool name to share")
        )
        return n.ToolGrantList(tuple(names), self.since(keyword))

    def parse_intent_member(self) -> n.IntentAttach:
        keyword = self.advance()
        self.expect(COLON, "`:` after `intent` (or declare `intent Name { ... }` at top level)")

        def inline() -> n.IntentDecl:
            name = self.expect_name("an intent name")
            return self.parse_intent_body(name.span, name)

        # Terms joined by `+`, as in a prompt: names of declared intents, and `{ ... }`
        # blocks of inline ones, in any mix.
        items: list[n.NameRef | n.IntentDecl] = []
        while True:
            if self.at(LBRACE):
                found, _ = self.block("`intent:`", keyword.span, inline)
                items.extend(found)
            else:
                name = self.expect_name("an intent name or `{ ... }`")
                items.append(n.NameRef(name.text, name.span))
            if not self.eat(PLUS):
                break
        return n.IntentAttach(tuple(items), self.since(keyword.span))

    # ---------------------------------------------------------------- config entries

    def parse_entry(self) -> n.ConfigEntry:
        name = self.expect_name("a field name such as `model:` or `prompt:`")
        self.expect(COLON, f"`:` after `{name.text}`")
        value = self.parse_value()
        return n.ConfigEntry(name, value, self.since(name.span))

    def parse_value(self) -> n.ConfigValue:
        start = self.span(self.pos)
        terms = [self.parse_term()]
        while self.eat(PLUS):
            terms.append(self.parse_term())
        return n.ConfigValue(tuple(terms), self.since(start))

    def parse_term(self) -> n.ConfigTerm:
        if self.kinds[self.pos] is STRING:
            return self.parse_prompt_text()
        token = self.peek()
        if token.kind is LBRACE:
            if self.kind(1) in (IDENT, STRING) and self.kind(2) is COLON:
                return self.parse_object()
            items, span = self.block("the inline prompt block", token.span, self.parse_prompt_item)
            return n.PromptBlock(tuple(items), span)
        if token.kind is IDENT and token.text not in ("true", "false", "null"):
            self.skip()
            if self.at(LPAREN) and not self.newlines[self.pos]:
                return self.parse_call(n.Name(token.text, token.span))
            return n.NameRef(token.text, token.span)
        if token.kind in (NUMBER, MINUS, LBRACKET) or token.kind is IDENT:
            expr = self.parse_unary()
            if isinstance(expr, n.Literal | n.ArrayExpr):
                return expr
            self.report("E0100", "expected a literal value", expr.span)
            return n.Literal(None, expr.span)
        raise self.fail("a value (a name, a call, a string, a number or a `{ ... }` block)")

    # ---------------------------------------------------------------- types and fields

    def parse_field(self) -> n.Field:
        name = self.expect_name("a field name")
        optional = self.eat(QUESTION)
        self.expect(COLON, f"`:` and a type after `{name.text}`")
        type_ = self.parse_type()
        annotations = self.parse_annotations()
        return n.Field(name, type_, optional, annotations, self.since(name.span))

    def parse_params(self) -> tuple[n.Field, ...]:
        opener = self.span(self.pos)
        self.expect(LPAREN)
        params = self.listed(
            "the parameter list", opener, self.parse_field, RPAREN, "`)` in the parameter list"
        )
        return tuple(params)

    def listed(
        self,
        what: str,
        opener: Span,
        item: Callable[[], T],
        close: TokenKind,
        expected: str,
        *,
        lines: bool = False,
    ) -> list[T]:
        """Items up to ``close`` (consumed), after the opening bracket at ``opener``.

        Items are separated by commas, or also by line breaks when ``lines``. Messages raised
        inside note that ``what`` opened at ``opener``; a missing ``close`` is reported as
        "expected `,` or ``expected``".
        """
        items: list[T] = []
        self.blocks.append((what, opener))
        try:
            while not self.at(close):
                items.append(item())
                if not self.eat(COMMA) and not (lines and self.newlines[self.pos]):
                    break
            self.expect(close, f"`,` or {expected}")
        finally:
            self.blocks.pop()
        return items

    def parse_type(self) -> n.TypeExpr:
        simple = self.simple_type()
        if simple is not None:
            return simple
        self.deeper()
        try:
            return self.parse_union_type()
        finally:
            self.depth -= 1

    def simple_type(self) -> n.TypeExpr | None:
        """The common case in one step: a lone word (``string``, ``Person``) ends the type."""
        kinds, pos = self.kinds, self.pos
        if kinds[pos] is not IDENT or kinds[pos + 1] in _TYPE_CONTINUES:
            return None
        self.pos = pos + 1
        text = self.texts[pos]
        span = Span(self.starts[pos], self.ends[pos])
        if text in _PRIMITIVES:
            return n.PrimitiveType(text, span)  # type: ignore[arg-type]
        return n.TextType(span) if text == "Text" else n.NamedType(text, span)

    def parse_union_type(self) -> n.TypeExpr:
        first = self.parse_postfix_type()
        variants = [first]
        while self.eat(PIPE):
            variants.append(self.parse_postfix_type())
        if len(variants) == 1:
            return first
        return n.UnionType(tuple(variants), self.since(first.span))

    def parse_postfix_type(self) -> n.TypeExpr:
        type_ = self.parse_primary_type()
        links = self.links
        try:
            while self.at(LBRACKET) and self.kind(1) is RBRACKET:
                self.link()
                self.skip()
                self.skip()
                type_ = n.ArrayType(type_, self.since(type_.span))
        finally:
            self.links = links
        return type_

    def parse_primary_type(self) -> n.TypeExpr:
        token = self.peek()
        if token.kind is IDENT:
            self.skip()
            if token.text in _PRIMITIVES:
                return n.PrimitiveType(token.text, token.span)  # type: ignore[arg-type]
            if token.text == "Text":
                return n.TextType(token.span)
            return n.NamedType(token.text, token.span)
        if token.kind is STRING and isinstance(token.value, n.StringLit):
            self.skip()
            return n.LiteralType(token.value.value, token.span)
        if token.kind is LBRACE:
            fields, span = self.block("the inline object type", token.span, self.parse_field)
            return n.ObjectType(tuple(fields), span)
        if token.kind is LPAREN:
            self.skip()
            inner = self.parse_type()
            self.expect(RPAREN, "`)` to close the parenthesised type")
            return inner
        raise self.fail(
            "a type (`string`, `number`, `boolean`, `Text`, a type name, a string literal "
            "or `{ ... }`)"
        )

    def parse_annotations(self) -> tuple[n.Annotation, ...]:
        kinds = self.kinds
        if kinds[self.pos] is not AT:
            return ()  # the common case
        annotations: list[n.Annotation] = []
        while kinds[self.pos] is AT:
            at = self.span(self.pos)
            self.pos += 1
            word = self.texts[self.pos] if kinds[self.pos] is IDENT else ""
            if word == "desc":
                self.pos += 1
                text = self.expect_string('a string after `@desc`, e.g. @desc "what it is"')
                annotations.append(n.DescAnnotation(text, self.since(at)))
            elif word == "example":
                self.pos += 1
                annotations.append(self.parse_example_annotation(at))
            elif word in ("repeatable", "untrusted", "trusted", "quarantine"):
                self.pos += 1
                annotations.append(n.FlagAnnotation(word, self.since(at)))  # type: ignore[arg-type]
            elif word == "sensitive":
                self.pos += 1
                args = None
                if self.at(LPAREN) and not self.newlines[self.pos]:
                    args = self.parse_named_args("@sensitive")
                annotations.append(n.SensitiveAnnotation(args, self.since(at)))
            elif word == "approval":
                self.pos += 1
                args = None
                if self.at(LPAREN) and not self.newlines[self.pos]:
                    args = self.parse_named_args("@approval")
                annotations.append(n.ApprovalAnnotation(args, self.since(at)))
            elif word == "mcp":
                self.pos += 1
                annotations.append(self.parse_mcp_annotation(at))
            elif word == "maxOutput":
                self.pos += 1
                annotations.append(self.parse_max_output(at))
            else:
                self.unknown_annotation(self.tokens.token(self.pos - 1), self.peek())
        return tuple(annotations)

    def parse_max_output(self, at: Span) -> n.MaxOutputAnnotation:
        """``@maxOutput(N)`` (tokens) or ``@maxOutput(tokens = N)`` / ``(chars = N)``."""
        if self.kind(1) is NUMBER and self.kind(2) is RPAREN:
            self.expect(LPAREN)
            token = self.advance()
            self.expect(RPAREN)
            value = n.Literal(
                token.value if isinstance(token.value, int | float) else None, token.span
            )
            args: tuple[n.ExampleArg, ...] = (
                n.ExampleArg(n.Name("tokens", token.span), value, token.span),
            )
        else:
            args = self.parse_named_args("@maxOutput")
        return n.MaxOutputAnnotation(args, self.since(at))

    def parse_mcp_annotation(self, at: Span) -> n.McpAnnotation:
        """``@mcp(Server)`` or ``@mcp(Server, "tool-name")``; ``@mcp()`` parses (the checker
        says what is missing)."""
        self.expect(LPAREN, "`(` and a server name after `@mcp`, e.g. @mcp(Files)")
        server = None if self.at(RPAREN) else self.expect_name("the name of an `mcp` server")
        remote = None
        if server is not None and self.at(COMMA):
            self.pos += 1
            remote = self.expect_string(
                'the tool\'s name on the server after the comma, e.g. @mcp(Files, "read-file")'
            )
        self.expect(RPAREN, "`)` after the server name")
        return n.McpAnnotation(server, self.since(at), remote)

    def unknown_annotation(self, at: Token, word: Token) -> None:
        """Report ``@word`` and skip its argument, so the annotations after it still parse."""
        if word.kind is not IDENT:
            raise self.fail("an annotation name after `@`: " + _ANNOTATION_LIST, code="E0105")
        self.skip()
        self.report(
            "E0105",
            f"unknown annotation `@{word.text}`; expected {_ANNOTATION_LIST}",
            Span(at.span.start, word.span.end),
            help=did_you_mean("@" + word.text, _ANNOTATIONS),
        )
        if self.at(STRING) and not self.newlines[self.pos]:
            self.skip()
        elif self.at(LPAREN) and not self.newlines[self.pos]:
            depth = 0
            while not self.at(EOF):
                token = self.advance()
                depth += {LPAREN: 1, RPAREN: -1}.get(token.kind, 0)
                if depth == 0:
                    break

    def parse_example_annotation(self, at: Span) -> n.ExampleAnnotation:
        return n.ExampleAnnotation(self.parse_named_args("@example"), self.since(at))

    def parse_named_args(self, where: str) -> tuple[n.ExampleArg, ...]:
        """``(name = value, ...)`` after ``where`` (``@example``, a test's ``call f``)."""
        self.expect(LPAREN, f"`(` after `{where}`")
        args: list[n.ExampleArg] = []
        while not self.at(RPAREN):
            name = self.expect_name(f'an argument name, e.g. {where}(location = "Accra")')
            self.expect(ASSIGN, f"`=` after `{name.text}` in `{where}`")
            value = self.parse_expr()
            args.append(n.ExampleArg(name, value, self.since(name.span)))
            if not self.eat(COMMA):
                break
        self.expect(RPAREN, f"`,` or `)` in `{where}(...)`")
        return tuple(args)

    # ---------------------------------------------------------------- tests

    def parse_test(self, export: Span | None) -> n.TestDecl:
        keyword = self.advance_span()
        if export is not None:
            self.report("E0102", "a test cannot be exported", export, help="remove `export`")
        name = self.expect_string('the test\'s name, e.g. test "asks for the weather" { ... }')
        entries: list[n.ConfigEntry] = []
        replies: list[n.TestReply] | None = None
        tools: list[n.TestToolResult] = []
        expects: list[n.TestExpect] = []

        def item() -> None:
            nonlocal replies
            if self.kind(1) is COLON:
                entries.append(self.parse_entry())
            elif self.at_word("model"):
                opener = self.advance_span()
                found, _ = self.block("the test's `model`", opener, self.parse_test_reply)
                replies = (replies or []) + found
            elif self.at_word("tools"):
                opener = self.advance_span()
                tools.extend(self.block("the test's `tools`", opener, self.parse_tool_result)[0])
            elif self.at_word("expect"):
                opener = self.advance_span()
                expects.extend(self.block("`expect`", opener, self.parse_expectation)[0])
            else:
                raise self.fail(
                    "`agent:`, `input:`, `context:`, `config:`, `persona:`, `cassette:`, "
                    "`model { }`, `tools { }` or `expect { }` in a test"
                )

        _, span = self.block(f"test {name.value!r}", keyword, item, stop=self.starts_declaration)
        return n.TestDecl(
            name,
            tuple(entries),
            None if replies is None else tuple(replies),
            tuple(tools),
            tuple(expects),
            span,
        )

    def parse_test_reply(self) -> n.TestReply:
        start = self.span(self.pos)
        if self.eat_word("call"):
            name = self.expect_name("the name of a tool, workflow or helper after `call`")
            args = self.parse_named_args(f"call {name.text}")
            return n.TestReply("call", name, args, None, self.since(start))
        if self.eat_word("say"):
            text = self.expect_string('the model\'s answer after `say`, e.g. say "Hello!"')
            value = n.Literal(text.value, text.span)
            return n.TestReply("say", None, (), value, self.since(start))
        if self.eat_word("output"):
            return n.TestReply("output", None, (), self.parse_expr(), self.since(start))
        raise self.fail('`call f(a = 1)`, `say "..."` or `output { ... }` in `model { }`')

    def parse_tool_result(self) -> n.TestToolResult:
        name = self.expect_name("a tool name")
        self.expect(COLON, f"`:` after `{name.text}`")
        return n.TestToolResult(name, self.parse_expr(), self.since(name.span))

    def parse_expectation(self) -> n.TestExpect:
        start = self.span(self.pos)
        negated = self.eat_word("not") is not None
        if self.eat_word("called"):
            name = self.expect_name("the name of a tool, workflow or helper after `called`")
            args = None
            if self.at(LPAREN) and not self.newlines[self.pos]:
                args = self.parse_named_args(f"called {name.text}")
            kind: Literal["called", "not_called"] = "not_called" if negated else "called"
            return n.TestExpect(kind, name, args, None, self.since(start))
        if negated:
            raise self.fail("`called` after `not`")
        if self.eat_word("text"):
            self.expect_word("contains")
            return n.TestExpect("text", None, None, self.string_literal(), self.since(start))
        if self.eat_word("output"):
            return n.TestExpect("output", None, None, self.parse_expr(), self.since(start))
        if self.eat_word("error"):
            value = self.string_literal() if self.eat_word("contains") else None
            return n.TestExpect("error", None, None, value, self.since(start))
        if self.eat_word("intent"):
            name = self.expect_name("an intent name after `intent`")
            fields = None
            if self.at(LBRACE) and not self.newlines[self.pos]:
                fields = self.parse_expr()
            return n.TestExpect("intent", name, None, fields, self.since(start))
        raise self.fail(
            '`called f(...)`, `not called f`, `text contains "..."`, `output { ... }`, '
            "`error` or `intent Name` in `expect { }`"
        )

    def string_literal(self) -> n.Literal:
        text = self.expect_string("a string")
        return n.Literal(text.value, text.span)

    # ---------------------------------------------------------------- tools and workflows

    def parse_tool(self, export: Span | None = None) -> n.ToolDecl:
        keyword = self.advance_span()
        tool = self.parse_signature(keyword)
        if export is not None:
            return n.ToolDecl(
                tool.name,
                tool.params,
                tool.returns,
                tool.annotations,
                Span(export.start, tool.span.end),
                export,
            )
        return tool

    def parse_signature(self, start: Span | None = None) -> n.ToolDecl:
        if self.at_word("tool") and self.kind(1) is IDENT:
            # `tool` is optional inside `tools { }`: accept it rather than fail on it.
            start = start or self.advance_span()
        name = self.expect_name("a tool name")
        start = start or name.span
        params = self.parse_params()
        returns: n.TypeExpr | None = None
        if self.eat(COLON):
            returns = self.parse_type()
        else:
            self.report(
                "E0104",
                f"tool `{name.text}` has no return type",
                self.since(name.span),
                help=f"declare what it returns, e.g. `{name.text}(...): string`",
            )
        annotations = self.parse_annotations()
        return n.ToolDecl(name, params, returns, annotations, self.since(start))

    def parse_tools_block(self, export: Span | None = None) -> n.ToolsBlock:
        keyword = self.advance_span()
        items, span = self.block("`tools`", keyword, self.parse_tools_item)
        tools = tuple(item for item in items if isinstance(item, n.ToolDecl))
        groups = tuple(item for item in items if isinstance(item, n.Name))
        return n.ToolsBlock(tools, self.with_export(export, span), groups)

    def parse_tools_item(self) -> n.ToolDecl | n.Name:
        """A signature, or a bare name (a tool group used here) alone on its line."""
        if self.kinds[self.pos] is IDENT and self.kind(1) in (RBRACE, COMMA, EOF):
            return self.expect_name("a tool group name")
        if self.kinds[self.pos] is IDENT and self.kind(1) is IDENT and self.newlines[self.pos + 1]:
            return self.expect_name("a tool group name")
        return self.parse_signature()

    def parse_top_tools(self, export: Span | None) -> n.ToolGroupDecl | n.ToolsBlock:
        """``tools Name { ... }`` (a tool group), or a nameless ``tools { }`` (which the
        checker reports as outside an agent)."""
        if self.kind(1) is not IDENT:
            return self.parse_tools_block(export)
        keyword = self.advance_span()
        name = self.expect_name("a tool group name after `tools`")
        tools, span = self.block(
            f"`tools {name.text}`", keyword, self.parse_signature, stop=self.starts_declaration
        )
        return n.ToolGroupDecl(name, tuple(tools), self.with_export(export, span), export)

    def parse_workflow(self, export: Span | None = None) -> n.WorkflowDecl:
        keyword = self.advance()
        name = self.expect_name("a workflow name")
        params = self.parse_params()
        returns = self.parse_type() if self.eat(COLON) else None
        description: list[n.DescriptionEntry] = []
        tools: list[n.ToolDecl] = []
        groups: list[n.Name] = []
        what = f"`workflow {name.text}`"

        def item() -> n.Stmt | None:
            if self.at_word("description") and self.kind(1) is COLON:
                self.add_description(description, what)
            elif self.at_word("tool") and self.kind(1) is IDENT:
                tools.append(self.parse_tool())
            elif self.at_word("tools") and self.kind(1) is LBRACE:
                block = self.parse_tools_block()
                tools.extend(block.tools)
                groups.extend(block.groups)
            else:
                return self.parse_stmt()
            return None

        body, span = self.block(what, keyword.span, item, stop=self.starts_declaration)
        annotations = self.parse_annotations()
        return n.WorkflowDecl(
            name,
            params,
            returns,
            description[0] if description else None,
            tuple(tools),
            tuple(stmt for stmt in body if stmt is not None),
            annotations,
            self.with_export(export, self.since(span)),
            export,
            tuple(groups),
        )

    # ---------------------------------------------------------------- statements

    def parse_stmt(self) -> n.Stmt:
        pos = self.pos
        word = self.texts[pos] if self.kinds[pos] is IDENT else None
        if word == "let":
            self.pos += 1
            name = self.expect_name("a variable name after `let`")
            self.expect(ASSIGN, f"`=` after `let {name.text}`")
            stmt: n.Stmt = n.LetStmt(name, self.parse_expr(), self.since(self.span(pos)))
        elif word == "if":
            return self.parse_if_stmt()
        elif word == "return":
            self.pos += 1
            value = None if self.statement_ends() else self.parse_expr()
            stmt = n.ReturnStmt(value, self.since(self.span(pos)))
        elif word is not None and self.kind(1) is ASSIGN:
            self.pos += 2
            name = n.Name(word, self.span(pos))
            stmt = n.AssignStmt(name, self.parse_expr(), self.since(name.span))
        else:
            expr = self.parse_expr()
            if self.at(ASSIGN):
                self.report(
                    "E0108",
                    "only a variable can be assigned to",
                    expr.span,
                    help="workflows assign whole variables: `name = value`",
                )
                raise _Bail()
            stmt = n.ExprStmt(expr, expr.span)
        if not self.statement_ends():
            raise self.fail("a line break or `}` after the statement")
        return stmt

    def statement_ends(self) -> bool:
        pos = self.pos
        return self.newlines[pos] or self.kinds[pos] in (RBRACE, EOF)

    def parse_if_stmt(self) -> n.IfStmt:
        start = self.span(self.pos)
        branches: list[n.IfBranch] = []
        else_body: tuple[n.Stmt, ...] | None = None
        while True:
            keyword = self.expect_word("if")
            cond = self.parse_condition()
            body, _ = self.block("the `if` block", keyword.span, self.parse_stmt)
            branches.append(n.IfBranch(cond, tuple(body), self.since(keyword.span)))
            if not self.at_word("else"):
                break
            else_kw = self.advance_span()
            if self.at_word("if"):
                continue
            body, _ = self.block("the `else` block", else_kw, self.parse_stmt)
            else_body = tuple(body)
            break
        return n.IfStmt(tuple(branches), else_body, self.since(start))

    def parse_condition(self) -> n.Expr:
        self.expect(LPAREN, "`(` before the condition")
        cond = self.parse_expr()
        self.expect(RPAREN, "`)` after the condition")
        return cond

    # ---------------------------------------------------------------- expressions

    def parse_expr(self, min_power: int = 1) -> n.Expr:
        """Precedence climbing over ``_BINDING`` (all binary operators are left-associative)."""
        left = self.simple_atom() or self.parse_unary()
        kinds = self.kinds
        if _BINDING.get(kinds[self.pos], 0) < min_power:
            return left  # the common case: no operator follows
        links = self.links
        try:
            while True:
                pos = self.pos
                power = _BINDING.get(kinds[pos], 0)
                if power < min_power:
                    return left
                self.link()
                self.pos = pos + 1
                right = self.parse_expr(power + 1)
                span = Span(left.span.start, right.span.end)
                op = self.texts[pos]
                left = n.Binary(op, left, right, span, self.span(pos))  # type: ignore[arg-type]
        finally:
            self.links = links

    def simple_atom(self) -> n.Expr | None:
        """The common case in one step: a literal or a plain name with nothing after it."""
        kinds, pos = self.kinds, self.pos
        kind = kinds[pos]
        if kind is EOF:
            return None
        after = kinds[pos + 1]
        # The same rule as parse_postfix: `.` always continues, `[` and `(` only on this line.
        if after is DOT or (after in _ATOM_CONTINUES and not self.newlines[pos + 1]):
            return None
        if kind is NUMBER or kind is STRING:
            value = self.values[pos]
            self.pos = pos + 1
            return n.Literal(
                value.value if isinstance(value, n.StringLit) else value,
                Span(self.starts[pos], self.ends[pos]),
            )
        text = self.texts[pos]
        if kind is not IDENT or text in STATEMENT_WORDS or text == "ctx":
            return None
        self.pos = pos + 1
        span = Span(self.starts[pos], self.ends[pos])
        if text in _KEYWORD_LITERALS:
            return n.Literal(_KEYWORD_LITERALS[text], span)
        return n.NameRef(text, span)

    def parse_unary(self) -> n.Expr:
        self.deeper()
        try:
            return self.parse_unary_inner()
        finally:
            self.depth -= 1

    def parse_unary_inner(self) -> n.Expr:
        if self.kinds[self.pos] not in (BANG, MINUS):
            return self.parse_postfix()
        token = self.advance()
        operand = self.parse_unary()
        span = Span(token.span.start, operand.span.end)
        if token.kind is MINUS and isinstance(operand, n.Literal):
            value = operand.value
            if isinstance(value, int | float) and not isinstance(value, bool):
                return n.Literal(-value, span)
        return n.Unary(token.text, operand, span)  # type: ignore[arg-type]

    def parse_postfix(self) -> n.Expr:
        expr = self.parse_atom()
        links = self.links
        try:
            while True:
                kind = self.kinds[self.pos]
                if kind is DOT:
                    self.link()
                    self.pos += 1
                    name = self.expect_same_line_name("a field name after `.`")
                    expr = n.Member(expr, name, Span(expr.span.start, name.span.end))
                elif kind is LBRACKET and not self.newlines[self.pos]:
                    self.link()
                    self.pos += 1
                    index = self.parse_expr()
                    self.expect(RBRACKET, "`]` after the index")
                    expr = n.Index(expr, index, self.since(expr.span))
                elif kind is LPAREN and not self.newlines[self.pos]:
                    if not isinstance(expr, n.NameRef):
                        raise self.fail(
                            "an operator or a line break (only named tools can be called)"
                        )
                    expr = self.parse_call(n.Name(expr.name, expr.span))
                else:
                    return expr
        finally:
            self.links = links

    def parse_call(self, callee: n.Name) -> n.Call:
        opener = self.span(self.pos)
        self.expect(LPAREN)
        what = f"the call to `{callee.text}`"
        args = self.listed(what, opener, self.parse_expr, RPAREN, "`)` in the argument list")
        return n.Call(callee, tuple(args), self.since(callee.span))

    def parse_atom(self) -> n.Expr:
        pos = self.pos
        kind = self.kinds[pos]
        if kind is NUMBER or kind is STRING:
            self.pos = pos + 1
            value = self.values[pos]
            literal = value.value if isinstance(value, n.StringLit) else value
            return n.Literal(literal, self.span(pos))
        text = self.texts[pos]
        if kind is IDENT and text not in STATEMENT_WORDS:
            self.pos = pos + 1
            if text in _KEYWORD_LITERALS:
                return n.Literal(_KEYWORD_LITERALS[text], self.span(pos))
            if text == "ctx" and self.at(DOT):
                self.pos += 1
                name = self.expect_same_line_name("a context field after `ctx.`")
                return n.CtxRef(name, Span(self.starts[pos], name.span.end))
            return n.NameRef(text, self.span(pos))
        if kind is LBRACKET:
            return self.parse_array()
        if kind is LBRACE:
            return self.parse_object()
        if kind is LPAREN:
            self.skip()
            inner = self.parse_expr()
            self.expect(RPAREN, "`)` to close the parenthesis")
            return inner
        raise self.fail("an expression")

    def parse_array(self) -> n.ArrayExpr:
        opener = self.advance_span()
        items = self.listed(
            "the array", opener, self.parse_expr, RBRACKET, "`]` in the array", lines=True
        )
        return n.ArrayExpr(tuple(items), self.since(opener))

    def parse_object(self) -> n.ObjectExpr:
        opener = self.advance_span()
        entries = self.listed(
            "the object", opener, self.parse_object_entry, RBRACE, "`}` in the object", lines=True
        )
        return n.ObjectExpr(tuple(entries), self.since(opener))

    def parse_object_entry(self) -> n.ObjectEntry:
        token = self.peek()
        if token.kind is STRING and isinstance(token.value, n.StringLit):
            self.skip()
            key = n.Name(token.value.value, token.span)
        else:
            key = self.expect_name("a key")
        self.expect(COLON, f"`:` after the key `{key.text}`")
        value = self.parse_expr()
        return n.ObjectEntry(key, value, self.since(key.span))

    # ---------------------------------------------------------------- prompts

    def parse_prompt_item(self) -> n.PromptItem:
        if self.kinds[self.pos] is STRING:
            return self.parse_prompt_text()
        token = self.peek()
        if token.kind is IDENT and token.text in ("Example", "example"):
            return self.parse_example()
        if token.kind is IDENT and token.text == "if":
            return self.parse_prompt_if()
        raise self.fail(
            "a string, an `Example { ... }` block or `if (...) { ... }` in the prompt",
            help=did_you_mean(token.text, ("Example", "if")) if token.kind is IDENT else None,
        )

    def parse_prompt_text(self) -> n.PromptText:
        string = self.values[self.pos]
        assert isinstance(string, n.StringLit)
        span = self.advance_span()
        template = _TemplateParser(self, string).parse()
        return n.PromptText(string, template, span)

    def parse_example(self) -> n.PromptExample:
        keyword = self.advance()
        found: dict[str, n.PromptText] = {}

        def item() -> None:
            name = self.expect_name("`user:` or `assistant:`")
            if name.text not in ("user", "assistant"):
                self.report(
                    "E0115",
                    f"unknown key `{name.text}` in `{keyword.text}`; expected `user` or "
                    "`assistant`",
                    name.span,
                    help=did_you_mean(name.text, ("user", "assistant")),
                )
                raise _Bail()
            self.expect(COLON, f"`:` after `{name.text}`")
            if not self.at(STRING):
                raise self.fail(f"a string after `{name.text}:`")
            found[name.text] = self.parse_prompt_text()

        _, span = self.block(f"`{keyword.text}`", keyword.span, item)
        missing = [key for key in ("user", "assistant") if key not in found]
        if missing:
            self.report(
                "E0115",
                f"`{keyword.text}` needs both `user:` and `assistant:`; missing "
                + " and ".join(f"`{key}:`" for key in missing),
                span,
            )
            raise _Bail()
        return n.PromptExample(found["user"], found["assistant"], span)

    def parse_prompt_if(self) -> n.PromptIf:
        keyword = self.advance_span()
        cond = self.parse_condition()
        then, _ = self.block("the prompt `if` block", keyword, self.parse_branch_item)
        else_: tuple[n.PromptItem, ...] | None = None
        if self.at_word("else"):
            else_kw = self.advance_span()
            if self.at_word("if"):
                else_ = (self.parse_prompt_if(),)
            else:
                items, _ = self.block("the `else` block", else_kw, self.parse_branch_item)
                else_ = tuple(items)
        return n.PromptIf(cond, tuple(then), else_, self.since(keyword))

    def parse_branch_item(self) -> n.PromptItem:
        if self.at_word("return"):
            keyword = self.advance_span()
            if not self.at(STRING):
                raise self.fail("a string after `return` in a prompt")
            text = self.parse_prompt_text()
            return n.PromptText(text.string, text.template, self.since(keyword))
        return self.parse_prompt_item()


_KEYWORD_LITERALS: dict[str, bool | None] = {"true": True, "false": False, "null": None}
# Never names inside an expression, so a missing `)` before `let` is caught on the right line.
STATEMENT_WORDS = frozenset(("let", "return", "if", "else"))

_DECL_PARSERS: dict[str, Callable[[_Parser, Span | None], n.Decl]] = {
    "model": _Parser.parse_model,
    "mcp": _Parser.parse_mcp,
    "type": _Parser.parse_type_decl,
    "prompt": _Parser.parse_prompt,
    "persona": _Parser.parse_persona,
    "intent": _Parser.parse_intent_decl,
    "agent": _Parser.parse_agent,
    "helper": _Parser.parse_agent,
    "tool": _Parser.parse_tool,
    "tools": _Parser.parse_top_tools,
    "workflow": _Parser.parse_workflow,
    "test": _Parser.parse_test,
}

_MEMBER_PARSERS: dict[str, Callable[[_Parser], n.AgentMember]] = {
    "context": _Parser.parse_context,
    "input": _Parser.parse_input,
    "output": _Parser.parse_output,
    "tool": _Parser.parse_tool,
    "tools": _Parser.parse_tools_block,
    "workflow": _Parser.parse_workflow,
    "helpers": _Parser.parse_helpers,
    "personas": _Parser.parse_personas,
    "intent": _Parser.parse_intent_member,
    "description": _Parser.parse_description,
}


# --------------------------------------------------------------------------------------------
# Templates inside prompt strings


class _TemplateParser:
    """Parses one prompt string's ``{{...}}`` tags into ``TNode`` trees with file spans."""

    def __init__(self, parser: _Parser, string: n.StringLit) -> None:
        self.parser = parser
        self.string = string
        self.text = string.value
        # Open {{#if}} frames: (start of the tag, cond, then-nodes, else-nodes or None).
        self.stack: list[tuple[int, n.Expr, list[n.TNode], list[n.TNode] | None]] = []
        self.out: list[n.TNode] = []

    def span(self, start: int, end: int) -> Span:
        return self.string.span_of(start, end)

    def report(
        self, code: str, message: str, start: int, end: int, help: str | None = None
    ) -> None:
        self.parser.report(code, message, self.span(start, end), help=help)

    def current(self) -> list[n.TNode]:
        if not self.stack:
            return self.out
        frame = self.stack[-1]
        return frame[3] if frame[3] is not None else frame[2]

    def parse(self) -> tuple[n.TNode, ...]:
        text, pos = self.text, 0
        while pos < len(text):
            open_at = self.find(pos, "{{")
            if open_at == -1:
                self.add_text(pos, len(text))
                break
            self.add_text(pos, open_at)
            close_at = self.find(open_at + 2, "}}")
            if close_at == -1:
                self.report(
                    "E0110",
                    "unterminated template tag: `{{` has no matching `}}`",
                    open_at,
                    open_at + 2,
                    help="close the tag with `}}`, or write `\\{\\{` for literal braces",
                )
                break
            self.tag(open_at, close_at)
            pos = close_at + 2
        while self.stack:
            start = self.stack[-1][0]
            self.report(
                "E0111",
                "`{{#if}}` is never closed",
                start,
                self.text.find("}}", start) + 2,
                help="add `{{/if}}` where the conditional text ends",
            )
            self.close_if(len(self.text))
        return tuple(self.out)

    def find(self, start: int, pair: str) -> int:
        """Index of the next ``{{`` or ``}}`` written as such (``\\{\\{`` is literal), or -1."""
        source, offsets = self.parser.source.text, self.string.offsets
        at = self.text.find(pair, start)
        while at != -1 and (source[offsets[at]] == "\\" or source[offsets[at + 1]] == "\\"):
            at = self.text.find(pair, at + 1)
        return at

    def add_text(self, start: int, end: int) -> None:
        if end > start:
            self.current().append(n.TText(self.text[start:end], self.span(start, end)))

    def tag(self, open_at: int, close_at: int) -> None:
        inner_start = open_at + 2
        raw = self.text[inner_start:close_at]
        stripped = raw.strip()
        lead = inner_start + (len(raw) - len(raw.lstrip()))
        end = close_at + 2
        if stripped.startswith("#if"):
            self.open_if(open_at, lead + 3, lead + len(stripped))
        elif stripped == "else":
            self.else_tag(open_at, end)
        elif stripped == "/if":
            if not self.stack:
                self.report("E0112", "`{{/if}}` without an open `{{#if}}`", open_at, end)
            else:
                self.close_if(end)
        elif stripped.startswith("@"):
            self.directive(open_at, end, stripped, lead)
        elif stripped.startswith(("#", "/")):
            self.report(
                "E0113",
                f"unknown template block `{{{{{stripped}}}}}`",
                open_at,
                end,
                help="template blocks are `{{#if cond}}`, `{{else}}` and `{{/if}}`",
            )
        elif not stripped:
            self.report("E0114", "empty template tag `{{}}`", open_at, end)
        else:
            expr = self.expression(lead, lead + len(stripped))
            if expr is not None:
                self.current().append(n.TExpr(expr, self.span(open_at, end)))

    def expression(self, start: int, end: int) -> n.Expr | None:
        # The end of the expression is reported at the tag's closing `}}`, not the blank before.
        close = self.text.find("}}", end)
        offsets = (
            *self.string.offsets[start:end],
            self.string.offsets[close if close != -1 else end],
        )
        tokens, lex_diags = tokenize_fragment(self.text[start:end], offsets, self.parser.source)
        self.parser.diagnostics.extend(lex_diags)
        if lex_diags:
            return None
        sub = _Parser(self.parser.source, Tokens.of(tokens), self.parser.diagnostics)
        sub.depth, sub.too_deep = self.parser.depth, self.parser.too_deep
        if sub.at(EOF):
            self.report("E0114", "expected an expression in the template tag", start, end)
            return None
        try:
            expr = sub.parse_expr()
            if not sub.at(EOF):
                raise sub.fail("the end of the template expression (`}}`)")
        except _Bail:
            return None
        return expr

    def open_if(self, open_at: int, cond_start: int, cond_end: int) -> None:
        if len(self.stack) == MAX_DEPTH:
            # Deeper `{{#if}}`s are still matched with their `{{/if}}` (the stack is a list),
            # but the checker walks the tree recursively: refuse it here, once.
            self.report(
                "E0109",
                f"`{{{{#if}}}}` nested too deeply (more than {MAX_DEPTH} levels)",
                open_at,
                cond_end,
                help="split the prompt into named parts",
            )
        cond = self.expression(cond_start, cond_end)
        self.stack.append(
            (open_at, cond or n.Literal(None, self.span(open_at, cond_end)), [], None)
        )

    def else_tag(self, open_at: int, end: int) -> None:
        if not self.stack:
            self.report("E0112", "`{{else}}` without an open `{{#if}}`", open_at, end)
            return
        start, cond, then, else_ = self.stack[-1]
        if else_ is not None:
            self.report("E0112", "a second `{{else}}` in the same `{{#if}}`", open_at, end)
            return
        self.stack[-1] = (start, cond, then, [])

    def close_if(self, end: int) -> None:
        start, cond, then, else_ = self.stack.pop()
        node = n.TIf(
            cond, tuple(then), tuple(else_) if else_ is not None else None, self.span(start, end)
        )
        self.current().append(node)

    def directive(self, open_at: int, end: int, stripped: str, lead: int) -> None:
        body = stripped[1:].replace(" ", "")
        for target in ("input", "output", "context"):
            if body == f"schema({target})":
                self.current().append(n.TSchema(target, self.span(open_at, end)))
                return
        if body.startswith("schema("):
            help = "write `{{@schema(input)}}`, `{{@schema(output)}}` or `{{@schema(context)}}`"
            self.report(
                "E0113", f"unknown schema target in `{{{{{stripped}}}}}`", lead, end - 2, help
            )
            return
        name = body.split("(", 1)[0]
        self.report(
            "E0113",
            f"unknown template directive `@{name}`",
            lead,
            end - 2,
            help=did_you_mean(name, ("schema",)) or "the only directive is `@schema(...)`",
        )


def parse(source: SourceFile) -> tuple[n.Module, list[Diagnostic]]:
    """Parse one file. Never raises: problems come back as diagnostics (sorted by position)."""
    tokens, diagnostics = lex(source)
    parser = _Parser(source, tokens, diagnostics)
    try:
        module = parser.parse_module()
    except RecursionError:  # a last resort: MAX_DEPTH should make this unreachable
        span = parser.peek().span
        diagnostics.append(error("E0109", "the file is nested too deeply to read", source, span))
        module = n.Module(source, (), Span(0, len(source.text)))
    diagnostics.sort(key=lambda d: (d.span.start, d.span.end, d.code))
    return module, diagnostics
