"""The trigger prefilter of the secret guard finds exactly what a plain scan finds.

The oracle is the guard as it was before the triggers (issue 16): every rule's
pattern run over the whole text, each line counted from the start of the text.
The rules themselves are shared, so these tests prove that skipping rules whose
trigger did not fire, and counting lines incrementally, change no finding.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.memory.secrets import SECRET_RULES, Finding, find_secrets


def _plain_scan(text: str) -> list[Finding]:
    """The pre-trigger find_secrets, frozen: every pattern over the whole text."""
    findings: list[Finding] = []
    for rule in SECRET_RULES:
        for match in rule.pattern.finditer(text):
            if rule.accept(match.group(0)):
                line = text.count("\n", 0, match.start()) + 1
                findings.append(Finding(rule.name, rule.description, line))
    findings.sort(key=lambda f: f.line)
    return findings


# Pieces of real tokens, their triggers, near misses and separators, so that
# generated texts hold many matches, overlaps and almost-matches.
_PIECES = st.sampled_from(
    [
        "AKIA", "ASIA", "A", "KIA", "SIA", "IOSFODNN7EXAMPLE", "ABCDEFGHIJKLMNOP",
        "gh", "ghp_", "gho_", "ghr_", "github_pat_", "ithub_pat_",
        "sk-", "k-", "s", "sk-ant-", "ant-", "proj-", "svcacct-", "admin-", "sk-learn-",
        "xox", "xoxb-", "xoxo", "ox",
        "-----BEGIN ", "RSA ", "OPENSSH ", "PRIVATE KEY-----", "-----",
        "eyJ", "yJ", "e", ".", ".eyJ",
        "-", "_", " ", "\n", "\r\n", "a", "Z", "9", "é", "\u2028",
        "abcDEF123", "x" * 20, "Ab1" * 15, "abc-def-ghi", "risk-", "kebab-case-words",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECES, max_size=60).map("".join))
def test_findings_equal_the_plain_scan_on_adversarial_text(text: str) -> None:
    assert find_secrets(text) == _plain_scan(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_findings_equal_the_plain_scan_on_random_text(text: str) -> None:
    assert find_secrets(text) == _plain_scan(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=60).map("".join))
def test_every_match_holds_its_rules_trigger_and_anchor(text: str) -> None:
    for rule in SECRET_RULES:
        for match in rule.pattern.finditer(text):
            assert rule.trigger is None or rule.trigger.search(match.group(0)), rule.name
            assert rule.anchor in match.group(0), rule.name


def test_many_findings_report_their_own_lines() -> None:
    text = "\n".join(["clean line", "AKIAIOSFODNN7EXAMPLE", "", "x AKIAIOSFODNN7EXAMPLE -----BEGIN PRIVATE KEY-----"] * 3)
    assert find_secrets(text) == _plain_scan(text)
    assert [f.line for f in find_secrets(text)] == [2, 4, 4, 6, 8, 8, 10, 12, 12]


def test_a_long_clean_text_checked_again_is_still_clean_and_a_new_one_is_scanned() -> None:
    from bundlekit._secrets import CLEAN_REMEMBERED

    clean = "kick drills on saturday\n" * (CLEAN_REMEMBERED // 24 + 1)
    assert find_secrets(clean) == [] and find_secrets(clean) == []  # the second: the remembered object
    leaked = clean + "AKIAIOSFODNN7EXAMPLE\n"  # another object, scanned whole
    assert find_secrets(leaked) == _plain_scan(leaked) != []
    equal_not_same = "".join(["kick drills on saturday\n"] * (CLEAN_REMEMBERED // 24 + 1))
    assert equal_not_same is not clean and find_secrets(equal_not_same) == []


def test_a_freed_clean_texts_address_given_to_a_text_with_a_credential_is_scanned() -> None:
    # The memory of the last clean text is by identity: it must hold the text itself, so its address is never
    # another object's (a memo of id() alone would pass the next text allocated at that address as clean).
    import gc

    from bundlekit._secrets import CLEAN_REMEMBERED

    prefix = "kick drills on saturday\n" * (CLEAN_REMEMBERED // 24)
    clean = prefix + "kick drills on saturday\n"
    assert find_secrets(clean) == []
    address = id(clean)
    del clean
    gc.collect()
    for n in range(50):  # the same length: the allocator gives the freed address to the first of them
        leaked = prefix + f" AKIAIOSFODNN7EXAMPL{n % 10} .\n"
        assert find_secrets(leaked) != [], (n, id(leaked) == address)
        del leaked


def test_threads_checking_long_texts_together_find_every_credential() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from bundlekit._secrets import CLEAN_REMEMBERED

    clean = "kick drills on saturday\n" * (CLEAN_REMEMBERED // 24 + 1)
    leaked = [clean[: -24 * (n + 1)] + "AKIAIOSFODNN7EXAMPLE\n" for n in range(8)]

    def check(n: int) -> tuple[bool, bool]:
        return find_secrets(clean) == [], find_secrets(leaked[n % 8]) != []

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(a and b for a, b in pool.map(check, range(200)))
