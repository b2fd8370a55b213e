"""HTML to text (shared with the EPUB reader) and the HTML document source.

The converter walks the tree without recursion, drops non-content elements (scripts, styles, navigation,
site headers/footers, cookie banners…), puts every block element on its own line, joins inline text with
spaces and collapses whitespace (except inside ``<pre>``). Headings become their own blocks so a page can be
cut into sections labelled ``"§ Heading"``.

Code stays code in the text: a ``<pre>`` block, or a block whose text is all inside ``<code>``, ``<kbd>``,
``<samp>`` or ``<tt>``, is flagged (``Block.code``) and written indented by CODE_INDENT (as html2text and pandoc
write code blocks as plain text), so no line of it starts at column 0, where plain-text headings are looked for
(answer/outline.py: a C ``#  define`` line reads as a Markdown heading).

A page is parsed whole (html.parser via BeautifulSoup: ~650 bytes of memory for every element and run of
text), so what it may hold is bounded: at most MAX_HTML_BYTES, and at most MAX_HTML_NODES elements and text
runs (counted as they are parsed; a page with far more "<" than that is refused before parsing). A page over a
limit is refused with one line naming it (InputError), as an EPUB's zip-bomb check refuses (ziplimits.py); a
50 MB page of nested tags took 4.25 GB and minutes. The walk over the tree is linear in its size, however deep
it nests: which elements hold an <h1>, <main>, <article> or a table is marked once, bottom up (_Marks), not
searched for again under every wrapper (5,000 nested class="menu" <div>s took 109 s).
"""

from __future__ import annotations

import codecs
import re
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Iterator

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, NavigableString, Tag
from bs4.element import CData, PreformattedString, Script, Stylesheet, TemplateString

from infinipot_cli.errors import InputError
from infinipot_cli.documents.where import Where
from infinipot_cli.units import fmt_bytes

from .base import Passage, Source, display_name, repair_ligatures, split_text
from .text import looks_binary

# Never text: dropped everywhere (web pages and EPUB chapters).
DROP_ALWAYS = frozenset(
    "script style noscript template svg head title iframe object embed canvas audio video map "
    "button select option textarea input nav".split()
)
# Page furniture on web pages (kept in EPUB chapters, where e.g. <aside> is a real sidebar of the book).
DROP_WEB = frozenset("header footer aside form dialog menu".split())
BOILERPLATE_ROLES = frozenset("navigation banner contentinfo complementary search menu menubar dialog alert".split())
BOILERPLATE_WORDS = frozenset(
    "cookie cookies consent gdpr banner sidebar menu menubar footer nav navbar navigation breadcrumb breadcrumbs "
    "advert advertisement skiplink helpbox toolbar pagination pager social sharing feedback".split()
)
# Elements never dropped for their class/id (a <body class="nav-open"> must not take the page with it).
_PROTECTED = frozenset("html body main article".split())
HEADINGS = {f"h{i}": i for i in range(1, 7)}
BLOCKS = frozenset(
    "address article aside blockquote body caption center dd details dialog dir div dl dt fieldset figcaption "
    "figure footer form header hgroup hr html legend li main menu ol p pre section summary table tbody thead "
    "tfoot tr ul".split()
) | frozenset(HEADINGS)
CELLS = frozenset(("td", "th"))
CODE_INLINE = frozenset("code kbd samp tt".split())  # inline code: a block of nothing else is a code block
CODE_INDENT = "    "
_SKIP_STRINGS = (Script, Stylesheet, TemplateString)
_WS = re.compile(r"\s+")
_TOKEN_SPLIT = re.compile(r"[-_\s:.]+|(?<=[a-z])(?=[A-Z])")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)
# WHATWG: these labels mean windows-1252 in browsers.
_AS_CP1252 = {"ascii", "us-ascii", "latin-1", "latin1", "iso-8859-1", "iso8859-1", "l1", "cp819", "windows-1252"}
_TITLE_CHARS = 80
MAX_HTML_BYTES = 64 << 20      # a page (or an EPUB chapter) read whole; as ziplimits.MAX_MEMBER_BYTES
MAX_HTML_NODES = 300_000       # elements and text runs parsed: ~200 MB of tree (a 850 KB manual page has 43,000)
PROGRESS_TAGS = 50_000         # a page with more tags than this says so while it is parsed (with a notice)...
PROGRESS_EVERY_S = 5.0         # ... and how far it got, this often
_CONVERT = "convert it to text first (e.g. lynx -dump or pandoc -t plain) and read that"


@dataclass
class Block:
    """One line of converted text; ``heading`` is 1-6 for h1-h6, else 0; ``code``: the text of a ``<pre>``
    block, or of a block whose text is all inline code (``<code>``...), never a heading."""

    text: str
    heading: int = 0
    code: bool = False

    def as_text(self) -> str:
        """The block as a document's text shows it: a code block indented by CODE_INDENT, every line of it."""
        if not self.code:
            return self.text
        return "\n".join(CODE_INDENT + line if line.strip() else line for line in self.text.split("\n"))


def blocks_text(blocks: list[Block]) -> str:
    """Blocks as lines of text (code blocks indented: Block.as_text)."""
    return "\n".join(b.as_text() for b in blocks)


def decode_html(data: bytes) -> str:
    """Decode HTML bytes: BOM, else ``<meta charset>`` / XML declaration, else UTF-8 with cp1252 fallback."""
    for bom, enc in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                     (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            return data.decode(enc, "replace")
    head = data[:4096]
    m = _XML_ENCODING.search(head) or _META_CHARSET.search(head)
    if m:
        label = m.group(1).decode("ascii", "replace").lower()
        label = "cp1252" if label in _AS_CP1252 else label
        try:
            codec = codecs.lookup(label).name
        except LookupError:
            codec = None
        if codec and not codec.startswith("utf-16") and not codec.startswith("utf-32"):
            try:
                return data.decode(codec)
            except UnicodeDecodeError:
                pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


class _Bounded(BeautifulSoup):
    """A BeautifulSoup that stops parsing (InputError) once it has built more than `limit` elements and text
    runs: the memory a parse takes is bounded, whatever the page. With `notice`, a page of more than
    PROGRESS_TAGS tags ("<") says how far its parse got every PROGRESS_EVERY_S seconds."""

    def __init__(self, markup: str | bytes, limit: int, name: str,
                 notice: Callable[[str], None] | None = None) -> None:
        self._nodes, self._limit, self._what = 0, limit, name
        tags = markup.count("<" if isinstance(markup, str) else b"<") if notice is not None else 0
        self._notice = notice if tags > PROGRESS_TAGS else None
        self._tags, self._next = tags, time.monotonic() + PROGRESS_EVERY_S
        if self._notice is not None:
            self._notice(f"parsing {name} ({tags:,} tags)…")
        super().__init__(markup, "html.parser")

    def _count(self) -> None:
        self._nodes += 1
        if self._nodes > self._limit:
            raise InputError(f"{self._what}: refusing to parse it: it holds more than {self._limit:,} HTML elements "
                             f"and runs of text, the limit for a page read whole in bounded memory; {_CONVERT}")
        if self._notice is not None and not self._nodes & 4095 and time.monotonic() >= self._next:
            self._notice(f"parsing {self._what}: ~{min(99, 100 * self._nodes // max(1, self._tags))}%…")
            self._next = time.monotonic() + PROGRESS_EVERY_S

    def handle_starttag(self, *args, **kwargs):
        self._count()
        return super().handle_starttag(*args, **kwargs)

    def object_was_parsed(self, *args, **kwargs):
        self._count()
        return super().object_was_parsed(*args, **kwargs)


def check_bytes(size: int, name: str, more: bool = False) -> None:
    """InputError (one line naming the limit) for a page of `size` bytes (`more`: at least) over MAX_HTML_BYTES:
    the opener asks before it reads a page whole."""
    if size > MAX_HTML_BYTES:
        raise InputError(f"{name}: refusing to parse it: {'over ' if more else ''}{fmt_bytes(size)} of HTML, over the "
                         f"limit of {fmt_bytes(MAX_HTML_BYTES)} for a page read whole; {_CONVERT}")


def check_size(data: bytes, name: str, max_nodes: int | None = None) -> None:
    """InputError (one line naming the limit) for HTML bytes over MAX_HTML_BYTES, or with more than twice
    MAX_HTML_NODES tags by a count of "<" (refused before parsing: the count is a C loop over the bytes)."""
    max_nodes = MAX_HTML_NODES if max_nodes is None else max_nodes
    check_bytes(len(data), name)
    tags = data.count(b"<")
    if tags > 2 * max_nodes:
        raise InputError(f"{name}: refusing to parse it: about {tags:,} tags, over the limit of {max_nodes:,} HTML "
                         f"elements and runs of text for a page read whole in bounded memory; {_CONVERT}")


def parse_html(markup: str | bytes, name: str = "the page", max_nodes: int | None = None,
               notice: Callable[[str], None] | None = None) -> BeautifulSoup:
    """Parse with the built-in ``html.parser`` (quietly: short inputs that look like file names are fine), at
    most `max_nodes` (MAX_HTML_NODES) elements and text runs: InputError naming `name` beyond that. `notice`:
    told how far the parse of a large page got (_Bounded)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        return _Bounded(markup, MAX_HTML_NODES if max_nodes is None else max_nodes, name, notice)


def _tokens(tag: Tag) -> set[str]:
    values: list[str] = []
    cls = tag.get("class")
    if isinstance(cls, str):
        values.append(cls)
    elif cls:
        values.extend(cls)
    ident = tag.get("id")
    if isinstance(ident, str):
        values.append(ident)
    return {t.lower() for v in values for t in _TOKEN_SPLIT.split(v) if t}


def _is_hidden(tag: Tag) -> bool:
    if tag.has_attr("hidden") or str(tag.get("aria-hidden", "")).lower() == "true":
        return True
    style = str(tag.get("style", "")).replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


HEADING_MARKS = {"¶", "§", "#", "🔗", "\uf0c1"}


def _is_heading_mark(tag: Tag) -> bool:
    """A permalink mark beside a heading (Sphinx's "¶" headerlink, "#" or "§" anchors): not text."""
    if tag.name != "a" or not str(tag.get("href", "")).startswith("#"):
        return False
    return "headerlink" in _tokens(tag) or tag.get_text(strip=True) in HEADING_MARKS


_CONTENT = ("main", "article", "h1")       # a wrapper holding one of these is kept whatever its class says
_SECTIONING = ("article", "main", "section")  # a header/footer inside one of these is content


class _Marks:
    """What the elements under `root` hold, marked once bottom up (linear in the tree, however deep): the ids of
    the elements with a main/article/h1 inside them, and of those with a table inside them."""

    def __init__(self, root: Tag) -> None:
        self.content = self._ancestors(root, _CONTENT)
        self.table = self._ancestors(root, "table")

    @staticmethod
    def _ancestors(root: Tag, names) -> set[int]:
        out: set[int] = set()
        for tag in root.find_all(names):
            up = tag.parent
            while up is not None and id(up) not in out:  # stop where an earlier walk up went on
                out.add(id(up))
                up = up.parent
        return out


def _drop(tag: Tag, web: bool, marks: _Marks | None = None, sectioned: bool | None = None) -> bool:
    """Whether ``tag`` (and everything inside it) is left out of the text. `marks`: what the elements hold (by
    a search under `tag` without); `sectioned`: whether an article/main/section encloses `tag` (looked up
    without)."""
    name = tag.name
    if name in DROP_ALWAYS or _is_hidden(tag) or _is_heading_mark(tag):
        return True
    if not web:
        return False
    if name in DROP_WEB:
        # An <article>'s own header/footer is content (its title, byline); the site's is furniture.
        if name not in ("header", "footer"):
            return True
        return not (tag.find_parent(_SECTIONING) is not None if sectioned is None else sectioned)
    if str(tag.get("role", "")).lower() in BOILERPLATE_ROLES:
        return True
    if name in _PROTECTED or not (_tokens(tag) & BOILERPLATE_WORDS):
        return False
    # A wrapper that merely mentions e.g. "sidebar" but holds the main content is kept.
    return (id(tag) not in marks.content) if marks is not None else tag.find(_CONTENT) is None


def html_to_blocks(markup: str | bytes | Tag, *, web: bool = True) -> list[Block]:
    """Convert HTML (a page, or one element of a parsed page) to text blocks, one per block element; headings
    are flagged; a data table is one block per row (table_rows).

    ``web=True`` strips web-page furniture (nav, header, footer, aside, form, role=navigation, cookie/menu/
    sidebar… classes); ``web=False`` (EPUB chapters) only drops non-text elements and hidden ones.
    """
    soup = markup if isinstance(markup, Tag) else parse_html(markup)
    root: Tag = soup.body or soup
    marks = _Marks(root)
    sectioned = 0  # article/main/section elements open around the walk
    part = isinstance(markup, Tag) and root.name not in ("[document]", "html", "body")  # a table cell...: what
    # encloses it is looked up, for a header or footer only
    blocks: list[Block] = []
    buf: list[str] = []
    pre = 0
    heading = 0
    code = 0      # inside inline code elements (CODE_INLINE)
    seen = [False, False]  # the buffer holds text outside code / inside code

    def flush() -> None:
        text = "".join(buf)
        buf.clear()
        prose, coded = seen
        seen[:] = [False, False]
        if pre:
            text = "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")
        else:
            text = _WS.sub(" ", text).strip()
        if text.strip():
            blocks.append(Block(repair_ligatures(text), heading, not heading and (pre > 0 or (coded and not prose))))

    stack: list[tuple[Tag, Iterator]] = [(root, iter(list(root.contents)))]
    while stack:
        tag, children = stack[-1]
        child = next(children, None)
        if child is None:  # leaving ``tag``
            stack.pop()
            name = tag.name
            if name in BLOCKS:
                flush()
                if name in HEADINGS:
                    heading = 0
                elif name == "pre":
                    pre -= 1
            elif name in CODE_INLINE:
                code -= 1
            if name in _SECTIONING:
                sectioned -= 1
            continue
        if isinstance(child, NavigableString):
            if isinstance(child, _SKIP_STRINGS) or (isinstance(child, PreformattedString) and not isinstance(child, CData)):
                continue
            text = str(child)
            if text.strip():
                seen[1 if code or pre else 0] = True
            buf.append(text)
            continue
        if not isinstance(child, Tag) or _drop(child, web, marks, True if sectioned else (None if part else False)):
            continue
        name = child.name
        if name == "table":
            rows = table_rows(child, web, id(child) in marks.table)
            if rows is not None:  # a data table: one line per row, each value with its column's name
                flush()
                blocks.extend(Block(repair_ligatures(r)) for r in rows)
                continue
        if name == "br":
            if pre:
                buf.append("\n")
            else:
                flush()
            continue
        if name in BLOCKS:
            flush()
            if name in HEADINGS:
                heading = HEADINGS[name]
            elif name == "pre":
                pre += 1
        elif name in CELLS and any(s.strip() for s in buf):
            buf.append(" | ")
        elif name in CODE_INLINE:
            code += 1
        if name in _SECTIONING:
            sectioned += 1
        stack.append((child, iter(list(child.contents))))
    flush()
    return blocks


# ---- tables ---------------------------------------------------------------------------------------------------
TABLE_CELL_CHARS = 300   # a table whose cells average more than this is layout, not data
_ROW_END = re.compile(r"[.!?:][\"')\]]*$")


def _cell_text(cell: Tag, web: bool) -> str:
    return " ".join(b.text for b in html_to_blocks(cell, web=web)).strip()


def _span(cell: Tag) -> int:
    try:
        return max(1, min(50, int(str(cell.get("colspan", "1")).strip() or 1)))
    except ValueError:
        return 1


def _own_rows(table: Tag) -> list[Tag]:
    """The table's rows (table_rows asks only of a table with no table inside it: every row is its own)."""
    return table.find_all("tr")


def _in_thead(tr: Tag, table: Tag) -> bool:
    """Whether row `tr` of `table` is in its <thead> (looked for up to the table only, not the whole page)."""
    up = tr.parent
    while up is not None and up is not table:
        if up.name == "thead":
            return True
        up = up.parent
    return False


def table_rows(table: Tag, web: bool = True, nested: bool | None = None) -> list[str] | None:
    """A data table as lines: one per row, each value named by its column's header ("Name: Puffin; Count: 412."),
    ending as a sentence, so a pot, its archive and the evidence hold a row whole; a table without a header row
    gives its cells joined by " | ". The caption, if any, comes first. None for a layout table (a table
    inside it, or long cells), which is read as ordinary blocks. `nested`: whether a table is inside it, when
    the caller knows (html_to_blocks' marks)."""
    if table.find("table") is not None if nested is None else nested:
        return None
    rows: list[tuple[list[str], bool]] = []   # (cells, every cell a <th>)
    for tr in _own_rows(table):
        if _drop(tr, web, sectioned=True):
            continue
        cells, all_th = [], True
        head = _in_thead(tr, table)
        for cell in tr.find_all(["td", "th"], recursive=False):
            if _drop(cell, web, sectioned=True):
                continue
            text = _cell_text(cell, web)
            all_th &= cell.name == "th" or (not text and head)
            cells.extend([text] + [""] * (_span(cell) - 1))
        if any(cells):
            rows.append((cells, all_th or head))
    if len(rows) < 2 or max(len(c) for c, _ in rows) < 2:
        return None
    lengths = [len(t) for c, _ in rows for t in c if t]
    if sum(lengths) > TABLE_CELL_CHARS * len(lengths):
        return None
    out = []
    caption = table.find("caption")
    if caption is not None and not _drop(caption, web, sectioned=True):
        text = _cell_text(caption, web)
        if text:
            out.append(text)
    header: list[str] = []
    for cells, is_header in rows:
        if is_header:
            header = [_WS.sub(" ", h).strip().rstrip(":") for h in cells]
            continue
        if header:
            pairs = [f"{header[i]}: {v}" if i < len(header) and header[i] else v
                     for i, v in enumerate(cells) if v]
            line = "; ".join(p.rstrip(".;,") if k < len(pairs) - 1 else p for k, p in enumerate(pairs))
            out.append(line if _ROW_END.search(line) else line + ".")
        else:
            out.append(" | ".join(cells))
    return out


def short_title(text: str, limit: int = _TITLE_CHARS) -> str:
    """A heading shortened for a provenance label."""
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def blocks_to_sections(blocks: list[Block]) -> list[tuple[str, str]]:
    """Group blocks into ``(heading, text)`` sections; text before the first heading gets heading ``""``.

    A heading directly followed by another heading (e.g. h1 title then h2) is folded into the next section.
    """
    sections: list[tuple[str, list[str]]] = []
    title, lines, only_heading = "", [], False
    for b in blocks:
        if b.heading:
            if lines and not only_heading:
                sections.append((title, lines))
                lines = []
            title, only_heading = b.text, True
            lines.append(b.text)
        else:
            lines.append(b.as_text())
            only_heading = False
    if lines:
        sections.append((title, lines))
    return [(t, "\n".join(ls)) for t, ls in sections]


class HtmlSource(Source):
    """An HTML page (read whole: HTML needs a complete parse), yielded per heading section."""

    format = "html"

    def __init__(self, path: str, data: bytes, *, hash_file: str | None = None, content_hash: str | None = None,
                 notice: Callable[[str], None] | None = None) -> None:
        super().__init__(path, len(data))
        self._hash_file = hash_file
        self._hash = content_hash
        name = display_name(path)
        if not data.strip():
            raise InputError(f"{name} is empty")
        if not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and looks_binary(data[:65536]):
            raise InputError(f"{name} looks like binary data, not HTML")
        check_size(data, name)
        try:
            blocks = html_to_blocks(parse_html(decode_html(data), name, notice=notice), web=True)
        except InputError:
            raise
        except Exception as e:  # html.parser is lenient; this is a last resort
            raise InputError(f"{name}: could not parse the HTML ({type(e).__name__})") from None
        if not blocks:
            raise InputError(f"{name}: no readable text in this HTML page")
        self._sections = blocks_to_sections(blocks)

    def _passages(self) -> Iterator[Passage]:
        sections, self._sections = self._sections, []
        for k, (title, text) in enumerate(sections):
            where = Where(section=short_title(title)).label() if title else ""
            pieces = split_text(text)
            for j, piece in enumerate(pieces):
                yield Passage(piece, where, (k + j / len(pieces)) / len(sections), 1 / (len(sections) * len(pieces)))
