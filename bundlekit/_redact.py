"""The one redaction every message passes: what leaves the process never shows a credential.

Every surface prints through :func:`redact` (``cli/output`` for stdout and
stderr, the MCP server for tool results, tool errors, resources and prompts, the
browsing interface for every value a page shows), so a credential a user, a
client or a file hands us is replaced wherever it ends up: an argument echoed by
an error, a key, a type, a file name, a URL's query, a validation library's echo
of the value it refused. It replaces, in order:

* **URL credentials** (:data:`WITHHELD`): the password of ``scheme://user:password@``
  and the value of a query parameter whose name says it is one (``token``,
  ``api_key``, ``password``, ``X-Amz-Signature``, ...);
* **credential-looking text** (:data:`WITHHELD`): every match of the secret
  guard's rules (``_secrets``: AWS, GitHub, Anthropic, OpenAI, Slack, PEM
  private keys, whole, JWTs), the same rules that refuse a credential in a memory, so
  what the guard refuses is exactly what output withholds (:func:`mask`, which
  ``memory/withhold`` shows memories through);
* **encoded forms** of those: a word holding a percent escape, a ``\\u``/``\\x``
  escape, an escaped line break, a Markdown escape of ``-``, ``_`` or ``.``, or
  an invisible character (zero-width, bidi), or a run of base64 (at any of its
  four alignments), that decodes to credential-looking text is replaced whole,
  and so is what follows a replaced credential across an escape or an invisible
  character; invisible characters and base64 are looked for in a text of at
  most :data:`DEEP_SEARCH_LIMIT` characters (every message, not a whole
  listing), and such a text that still decodes to a credential spread over
  several words is withheld whole (each line that does, when it has several lines).

``WITHHELD`` is shorter than any rule's match and holds no character JSON
escapes, so a redacted JSON line is still the same JSON with shorter strings.
Text with nothing to replace costs one pass (``_marks.marks``: the rules' triggers and the
characters each step needs, ``@``, ``=``, ``%``, ``\\``, ..., found at once, in C where it is
built; remembered for the last text, so a listing the memory layer checked is not scanned again); up to
:data:`DEEP_SEARCH_LIMIT` characters, searches for invisible characters and a
long base64 run; the rest runs only where one of them fires.

A caller that holds a credential's value (a pinning service's token) also removes
that value in every spelling with :func:`redact_known` (``***``): the pinning
layer does for each message of a service, and ``net/http``'s filter for the log
records of the HTTP libraries. Those values are not kept process-wide: a short
test secret would then change every later output of the process. The exception is
a process's own standing credential, known for its whole run and long enough
(:data:`MIN_PROCESS_SECRET_LEN`): ``serve``'s token (``$BUNDLEKIT_SERVE_TOKEN``) and the
routing token the clients send (``$BUNDLEKIT_ROUTING_TOKEN``) are registered once with
:func:`register_secret`, and :func:`redact` removes them from every output from then on.

This module sits at the lowest layer with the rules it uses (``_secrets``
imports only ``errors``), so every layer above can print through it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote

import bundlekit._secrets as secrets
from bundlekit._marks import AT, BACKSLASH, EQUALS, JSON_KEY, PERCENT, WITHHELD_ESCAPED, WITHHELD_TEXT, marks
from bundlekit._marks import WITHHELD as WITHHELD_MARK
from bundlekit._marks import marks_utf8
from bundlekit._secrets import every_rule_marked, find_secrets

__all__ = ["MIN_PROCESS_SECRET_LEN", "REDACTED", "WITHHELD", "each_string", "mask", "redact", "redact_known",
           "register_secret", "shown_as_is"]

REDACTED = "***"
WITHHELD = WITHHELD_TEXT
# Known secrets shorter than this are not redacted: replacing "a" everywhere would
# mangle every message and protects nothing.
MIN_SECRET_LEN = 4
# A secret registered for the whole process (register_secret) is at least this long.
MIN_PROCESS_SECRET_LEN = 16
# The process's own standing credentials (register_secret): redact removes them from every output.
_PROCESS_SECRETS: set[str] = set()


def register_secret(value: str) -> None:
    """Remove ``value`` from every later output of this process (``redact``): a credential the process holds
    for its whole run, such as ``serve``'s token. ``ValueError`` for one shorter than ``MIN_PROCESS_SECRET_LEN``
    (replacing a short string everywhere would mangle every message): the caller refuses such a token."""
    if len(value) < MIN_PROCESS_SECRET_LEN:
        raise ValueError(f"a process secret has at least {MIN_PROCESS_SECRET_LEN} characters")
    _PROCESS_SECRETS.add(value)


# -- known secrets, in every spelling ---------------------------------------------------------------


def _secret_forms(secret: str) -> set[str]:
    """The ways a secret shows up in messages: as is, escaped (as ``repr`` or an
    ``Illegal header value b'...'`` error prints it), and each piece between
    whitespace or control characters (a pasted token with a line break in it)."""
    forms = {secret, repr(secret)[1:-1], repr(secret.encode("utf-8", "backslashreplace"))[2:-1]}
    forms.add(secret.encode("unicode_escape").decode("ascii"))
    forms.update(re.split(r"[\s\x00-\x1f\x7f]+", secret))
    return {f for f in forms if len(f) >= MIN_SECRET_LEN}


def _char_pattern(char: str) -> str:
    """One character as it may be spelled: itself, percent-encoded (its UTF-8 bytes, either hex
    case; ``+`` for a space), or JSON-escaped (``\\uXXXX`` either case, ``\\/``, ``\\"``, ``\\\\``)."""
    spellings = [re.escape(char)]
    pct = "".join(f"%(?i:{byte:02x})" for byte in char.encode("utf-8", "surrogatepass"))
    spellings.append(pct)
    if char == " ":
        spellings.append(r"\+")
    if len(char.encode("utf-16-le", "surrogatepass")) == 2:
        spellings.append(rf"\\u(?i:{ord(char):04x})")
    short = {"/": r"\\/", '"': r'\\"', "\\": r"\\\\", "\n": r"\\n", "\r": r"\\r", "\t": r"\\t"}
    if char in short:
        spellings.append(short[char])
    return "(?:" + "|".join(spellings) + ")"


def _encoded_pattern(secret: str) -> re.Pattern[str]:
    """The secret with each character in any of its percent- or JSON-escaped spellings."""
    return re.compile("".join(_char_pattern(c) for c in secret))


# A run of base64 or base64url characters long enough to hide a 4-character secret.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{6,}={0,2}")


def _decoded_base64(run: str) -> str:
    """``run`` decoded as base64 or base64url (padding optional), as Latin-1 text; "" if it is neither."""
    body = run.rstrip("=")
    if len(body) % 4 == 1:
        body = body[:-1]  # a dangling character cannot decode; the rest still can
    padded = body + "=" * (-len(body) % 4)
    alphabet = b"-_" if ("-" in body or "_" in body) else None
    try:
        raw = base64.b64decode(padded, altchars=alphabet, validate=True)
    except (binascii.Error, ValueError):
        return ""
    return raw.decode("latin-1")


def _hides_secret(decoded: str, known: Iterable[str]) -> bool:
    for secret in known:
        if secret in decoded or secret.encode("utf-8").decode("latin-1") in decoded:
            return True
    return False


def redact_known(text: str, known: Iterable[str]) -> str:
    """Return ``text`` with every secret of ``known`` (of 4+ characters) replaced by ``***``.

    Replaced too: escaped spellings and the pieces of a secret holding
    whitespace or control characters (an HTTP library quoting a bad header
    prints ``\\n`` where the secret has a line break); the secret
    percent-encoded or JSON-escaped, wholly or in part (a service echoing a
    query string or a JSON body); and any base64 or base64url run that decodes
    to text holding it, at any alignment (a Basic ``Authorization`` header is
    base64 of ``user:password``).
    """
    kept = [s for s in known if s and len(s) >= MIN_SECRET_LEN]
    forms: set[str] = set()
    for secret in kept:
        forms |= _secret_forms(secret)
    for secret in kept:  # first: the pieces below would break up an escaped spelling
        text = _encoded_pattern(secret).sub(REDACTED, text)
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, REDACTED)
    if kept:
        # Base64 of a secret shares no characters with the secret at any fixed place,
        # so decode each run and look inside (text with no base64-looking run costs one scan).
        text = _BASE64_RUN.sub(
            lambda m: REDACTED if _hides_secret(_decoded_base64(m.group(0)), kept) else m.group(0), text
        )
    return text


# -- credential-looking text: the guard's rules ----------------------------------------------------


def _masker(rule: secrets.SecretRule) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        text = match.group(0)
        return WITHHELD if rule.accept(text) else text

    return replace


# A PEM private key from its header to its footer (or to the end of the text): the rule recognises the
# header, but the key is the base64 between them.
_PEM_BLOCK = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)", re.S)


def mask(text: str) -> str:
    """``text`` with every match of a secret rule replaced by :data:`WITHHELD` (``text`` itself when none);
    a PEM private key is replaced whole, header, key and footer."""
    if not find_secrets(text):
        return text
    if "PRIVATE KEY-----" in text:
        text = _PEM_BLOCK.sub(WITHHELD, text)
    for rule in secrets.SECRET_RULES:  # looked up here: the rules are compiled on first use
        text = rule.pattern.sub(_masker(rule), text)
    return text


# -- URL credentials ---------------------------------------------------------------------------------

# ``scheme://user:password@``: the password (the user name stays, it says whose it was). One slash or
# more: a path normalised by the OS or a library (``https:/user:pw@host``) still carries it.
_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.-]*:/+[^\s/?#@:\"'<>\\]*:)[^\s/?#@\"'<>\\]+(@)")
# A query parameter whose name ends in a credential's word: ``?token=``, ``&api_key=``, ``;sig=``...
_QUERY_PARAM = (
    r"[?&;][a-z0-9_.-]*(?:token|key|secret|password|passwd|pwd|auth|authorization|signature|sig"
    r"|credential|credentials|session|jwt)"
)
_QUERY_SECRET = re.compile(r"(?i)(" + _QUERY_PARAM + r"=)[^\s&#;\"'<>\\]+")
# The same parameter split at its ``=`` into a JSON key and value (``memory note`` reads ``K=V`` pairs, so
# ``url?token=VALUE`` prints as ``{"url?token":"VALUE"}``): the value of such a key.
_QUERY_SECRET_JSON = re.compile(r"(?i)(" + _QUERY_PARAM + r"\"\s*:\s*\")[^\"\\]+")


def _mask_urls(text: str) -> str:
    # Each check asks the text as it is then (``marks`` scans a text once: a text no rule changed is not scanned
    # again).
    if marks(text)[0] & AT:
        text = _USERINFO.sub(lambda m: m.group(1) + WITHHELD + m.group(2), text)
    if marks(text)[0] & EQUALS:
        text = _QUERY_SECRET.sub(lambda m: m.group(1) + WITHHELD, text)
    if marks(text)[0] & JSON_KEY:
        text = _QUERY_SECRET_JSON.sub(lambda m: m.group(1) + WITHHELD, text)
    return text


# -- encoded forms ----------------------------------------------------------------------------------

# Characters that show as nothing (zero-width, bidi and other format characters): one inside a credential
# hides it from every rule while the text shown is still the credential.
_INVISIBLE = (
    "\u00ad\u061c\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
)
# What ends a word: the escaped word around a mark below is decoded whole.
_WORD_END = frozenset(" \t\n\r\f\v\"'<>,;()[]{}")
# A percent escape, a backslash escape (``\u0073``, ``\\x73``, ``\n`` as JSON or repr prints one) or an invisible
# character: the word holding one may decode to a credential. Led by one character, so clean text is
# searched quickly.
_ESCAPE_MARK = re.compile(f"%[0-9A-Fa-f]{{2}}|\\\\+[uUxXnrt_.-]|[{_INVISIBLE}]")
_ESCAPE_STARTS = ("\\u", "\\U", "\\x", "\\X")
# A Markdown backslash escape of a character the rules' tokens hold (``sk\-ant\-...`` renders as ``sk-ant-...``).
_MARKDOWN_ESCAPES = ("\\-", "\\_", "\\.")
_MARKDOWN_ESCAPE = re.compile(r"\\([_.-])")
_BACKSLASH_ESCAPE = re.compile(r"\\+(?:[uU]([0-9A-Fa-f]{4})|[xX]([0-9A-Fa-f]{2}))")
_INVISIBLE_CHARS = re.compile(f"[{_INVISIBLE}]")
# A run of base64 long enough to hold the shortest rule's match (a Slack token's 15 characters encode to 20).
# It, and an invisible character, are looked for in a text of at most DEEP_SEARCH_LIMIT characters: the two
# searches cost about fifteen and five times the rules' scan, so a whole listing or export (a --json line, an
# MCP answer or a page of megabytes) is not searched; a message is.
_LONG_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}")
DEEP_SEARCH_LIMIT = 64 * 1024
# What is left of a credential after an escape or an invisible character (``repr`` of a token pasted over two
# lines, a zero-width space inside one).
_CONTINUED = re.compile(
    re.escape(WITHHELD) + f"(?:(?:\\\\+(?:[nrt]|[xX][0-9A-Fa-f]{{2}}|[uU][0-9A-Fa-f]{{4}})|[{_INVISIBLE}])+[A-Za-z0-9_+/=.-]*)+"
)


def _unescaped(word: str) -> str:
    """``word`` as it reads once decoded: percent and backslash escapes decoded (a few rounds: a double-encoded
    ``%2573``), then escaped line breaks and invisible characters removed (a token pasted over two lines, a
    zero-width space inside one), and Markdown's escapes of ``-``, ``_`` and ``.`` undone (a body rendered by
    the interface shows ``sk\\-ant\\-...`` as the key). Plain string searches where they do: a JSON answer quoting JSON holds
    hundreds of thousands of backslashes."""
    for _round in range(3):
        decoded = word
        if any(escape in decoded for escape in _ESCAPE_STARTS):
            decoded = _BACKSLASH_ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), decoded)
        if "%" in decoded:
            decoded = unquote(decoded)
        if decoded == word:
            break
        word = decoded
    for escape in ("\\n", "\\r", "\\t"):
        if escape in word:
            word = word.replace(escape, "")
    if any(escape in word for escape in _MARKDOWN_ESCAPES):
        word = _MARKDOWN_ESCAPE.sub(r"\1", word)
    return _INVISIBLE_CHARS.sub("", word) if _has_invisible(word) else word


def _credential_inside(decoded: str) -> bool:
    return bool(decoded) and (bool(find_secrets(decoded)) or _mask_urls(decoded) != decoded)


def _base64_hides_credential(run: str) -> bool:
    """``run`` decodes, at one of the four alignments, to text holding a credential (a run may start with
    characters that are not part of the base64, such as the folders of a path: ``/tmp/c2st...``)."""
    return any(_credential_inside(_decoded_base64(run[offset:])) for offset in range(4))


def _has_invisible(text: str) -> bool:
    return not text.isascii() and any(c in text for c in _INVISIBLE)


def _may_hold_escapes(text: str) -> bool:
    return bool(marks(text)[0] & (PERCENT | BACKSLASH)) or (len(text) <= DEEP_SEARCH_LIMIT and _has_invisible(text))


def _mask_escaped_words(text: str) -> str:
    """Each word around an escape mark that decodes to a credential, replaced whole."""
    pieces: list[str] = []
    done = 0
    for mark in _ESCAPE_MARK.finditer(text):
        if mark.start() < done:
            continue  # inside the word just looked at
        start, end = mark.start(), mark.end()
        while start > done and text[start - 1] not in _WORD_END:
            start -= 1
        while end < len(text) and text[end] not in _WORD_END:
            end += 1
        word = text[start:end]
        pieces += [text[done:start], WITHHELD if _credential_inside(_unescaped(word)) else word]
        done = end
    return "".join(pieces) + text[done:] if pieces else text


def _mask_escapes(text: str) -> str:
    """Each escaped word that decodes to a credential, replaced whole, before the rules look at the text: a
    rule would match the part before an escape (``sk-ant-...\\u0041...``) and leave the rest shown."""
    # Decoded whole first (a few C-speed passes): only a text that then reads as holding a credential is
    # looked at word by word (a JSON answer quoting JSON holds a backslash escape in every other word).
    if _may_hold_escapes(text) and _credential_inside(_unescaped(text)):
        text = _mask_escaped_words(text)
    return text


def _mask_base64(text: str) -> str:
    if len(text) <= DEEP_SEARCH_LIMIT and _LONG_BASE64_RUN.search(text) is not None:
        text = _LONG_BASE64_RUN.sub(lambda m: WITHHELD if _base64_hides_credential(m.group(0)) else m.group(0), text)
    return text


def redact(text: str) -> str:
    """``text`` as it may leave the process: URL credentials, credential-looking text and their encoded forms
    replaced (the module docstring); ``text`` itself when there is nothing to replace.

    A message (up to :data:`DEEP_SEARCH_LIMIT` characters) that still decodes to a credential once every
    word was looked at (one spread over several escaped words: ``-----B\\u0045GIN RSA PRIVATE KEY-----``)
    is withheld whole, or each of its lines that does when it has several (a listing of memories shows every
    other one)."""
    if _PROCESS_SECRETS:
        text = redact_known(text, _PROCESS_SECRETS)
    text = _mask_base64(mask(_mask_escapes(_mask_urls(text))))
    found = marks(text)[0]
    if found & WITHHELD_ESCAPED or (not text.isascii() and found & WITHHELD_MARK):
        text = _CONTINUED.sub(WITHHELD, text)
    if len(text) <= DEEP_SEARCH_LIMIT and _may_hold_escapes(text) and _credential_inside(_unescaped(text)):
        return _withheld_by_line(text)
    return text


def shown_as_is(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 whose text every output check leaves exactly as it is: :func:`redact`,
    ``_terminal.printable`` and ``_secrets.find_secrets`` (nothing found), and no terminal escape for click to
    strip. So a front end may print the bytes themselves, unchecked further, in place of the text decoded,
    checked and encoded again (15 MB for a ``memory list`` of 100,000 memories). True only when the one scan
    (``_marks.marks_utf8``) finds no mark at all, when every secret rule is gated by a mark that scan looks for,
    when no process secret is registered, and when the text is past :data:`DEEP_SEARCH_LIMIT` characters (the
    deep searches, invisible characters and long base64 runs, look only at shorter texts): each rule of those
    checks then has nothing it can match. Anything else answers False: the caller checks the text as any other."""
    found = marks_utf8(data)
    return (found is not None and found[0] == 0 and found[2] > DEEP_SEARCH_LIMIT and not _PROCESS_SECRETS
            and every_rule_marked())


_PEM_HEADER = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")
_PEM_FOOTER = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----")


# What a private key's lines between its header and footer hold: base64 (or base64url), RFC 1421's headers
# (``Proc-Type: 4,ENCRYPTED``, ``DEK-Info: AES-128-CBC,...``), spaces, and what quotes or indents a pasted block.
_KEY_LINE = re.compile(r"[A-Za-z0-9+/=_\-:,. >|#*\"'`]*")


def _in_key_after(line: str, in_key: bool) -> bool:
    """Whether the lines after ``line`` (decoded) are inside a private key: a header opens one, a footer after
    it closes it."""
    headers = [m.end() for m in _PEM_HEADER.finditer(line)]
    footers = [m.start() for m in _PEM_FOOTER.finditer(line)]
    if headers:
        return not footers or footers[-1] < headers[-1]
    return in_key and not footers


def _in_key(line: str) -> bool:
    """Whether ``line`` (decoded), after a key's header, can be a line of the key: one that holds anything else
    (a tab between fields, a word of prose) ends it, so a listing's next memories are shown."""
    return _KEY_LINE.fullmatch(line.strip()) is not None


def _withheld_by_line(text: str) -> str:
    """``text``, which still decodes to a credential once every word was looked at, with each line that does
    withheld whole: one line of a listing (a memory's description) does not hide the others. A private key's
    lines go from its header's line to its footer's, or to the first line that cannot be one of its lines
    (:func:`_in_key`), the key being the lines between. No other rule matches across a line break (each stops
    at whitespace), so the text is withheld whole only when one is spread over lines all the same."""
    if "\n" not in text:
        return WITHHELD
    kept: list[str] = []
    in_key = False
    for line in text.split("\n"):
        decoded = _unescaped(line) if _may_hold_escapes(line) else line
        if (in_key and _in_key(decoded)) or _credential_inside(decoded):
            kept.append(WITHHELD)
            in_key = _in_key_after(decoded, in_key)
        else:
            in_key = False
            kept.append(line)
    shown = "\n".join(kept)
    return WITHHELD if _credential_inside(_unescaped(shown)) else shown


def each_string(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (parsed YAML or JSON data) with ``change`` applied to every string in it, mapping keys
    included; mappings come back as dicts and sequences as lists, anything else as it is.

    Walked with a stack of its own, not by recursion: a timeline line nested ~450 deep (json.loads takes
    ~990) made ``memory context`` an "internal error (RecursionError)" two Python frames per level. A
    container met again (YAML aliases, even one holding itself) is copied once and shared, so the walk ends.
    """
    pending: list[tuple[Any, Any]] = []
    copies: dict[int, Any] = {}
    root = _copied(value, change, pending, copies)
    while pending:
        source, target = pending.pop()
        if isinstance(target, dict):
            for key, item in source.items():
                target[_copied(key, change, pending, copies)] = _copied(item, change, pending, copies)
        else:
            target.extend(_copied(item, change, pending, copies) for item in source)
    return root


def _copied(value: Any, change: Callable[[str], str], pending: list[tuple[Any, Any]], copies: dict[int, Any]) -> Any:
    """``value`` changed if a string; for a container its copy in ``copies``, else an empty dict or list to
    fill, queued on ``pending`` (``value`` stays referenced there, so its ``id`` is not reused meanwhile)."""
    if isinstance(value, str):
        return change(value)
    if id(value) in copies:
        return copies[id(value)]
    if isinstance(value, Mapping):
        target: dict[Any, Any] | list[Any] = {}
    elif isinstance(value, (list, tuple)):
        target = []
    else:
        return value
    pending.append((value, target))
    copies[id(value)] = target
    return target
