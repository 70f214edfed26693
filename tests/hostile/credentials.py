"""Credential-looking strings for the redaction tests, one strategy per family of the secret guard's rules
(``bundlekit/_secrets.py``) plus the URL credentials ``bundlekit/_redact.py`` withholds.

Each strategy draws a ``Credential``: the ``text`` placed in an argument and the ``secret`` part that must
never be printed (the whole token; for a URL, its password or its ``token=`` value). The random parts are
long enough that they cannot turn up in output by chance.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from hypothesis import strategies as st

BASE62 = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class Credential:
    family: str
    text: str  # what is typed into an argument
    secret: str  # what must never appear in output

    def leaked_in(self, output: str) -> bool:
        """The secret, or a 16-character piece of its start or end (a library that quotes a value cut to its
        ends, as pydantic does), is in ``output``."""
        pieces = {self.secret, self.secret[:16], self.secret[-16:]}
        return any(piece in output for piece in pieces)


def _mixed(n_min: int, n_max: int) -> st.SearchStrategy[str]:
    """Random base62 with at least one upper, one lower letter and one digit (a real key, never prose); the
    draws are distinct enough that no 16-character piece appears in output by chance."""
    return st.text(BASE62, min_size=n_min, max_size=n_max).map(lambda s: "Qz7" + s + "x9K")


def _token(family: str, prefix: str, tail: st.SearchStrategy[str]) -> st.SearchStrategy[Credential]:
    return tail.map(lambda t: Credential(family, prefix + t, prefix + t))


AWS = st.text(UPPER_DIGITS, min_size=13, max_size=13).map(lambda s: "Q7" + s + "Z").map(
    lambda s: Credential("aws", "AKIA" + s, "AKIA" + s)
)
ANTHROPIC = _token("anthropic", "sk-ant-api03-", _mixed(20, 40))
OPENAI = _token("openai", "sk-proj-", _mixed(20, 40))
GITHUB = _token("github", "ghp_", _mixed(33, 40))
SLACK = _token("slack", "xoxb-", _mixed(10, 30))
STRIPE = _token("stripe", "sk_live_", _mixed(18, 40))
GOOGLE = st.text(BASE62 + "_-", min_size=29, max_size=29).map(lambda s: "AIzaQz7" + s + "x9K").map(
    lambda key: Credential("google", key, key)  # AIza and exactly 35 more, as Google's keys are
)
JWT = st.tuples(_mixed(8, 20), _mixed(8, 20), _mixed(10, 30)).map(
    lambda p: Credential("jwt", f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}", f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}")
)
PEM = _mixed(24, 48).map(
    lambda body: Credential(
        "pem", f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----", body
    )
)
# Port 9 on loopback: a URL that is tried fails at once (nothing listens), never waits on the network.
URL_PASSWORD = _mixed(10, 24).map(
    lambda pw: Credential("url-password", f"https://agent:{pw}@127.0.0.1:9/bundle", pw)
)
URL_TOKEN = _mixed(10, 24).map(lambda tok: Credential("url-token", f"http://127.0.0.1:9/api?token={tok}", tok))

FAMILIES = (AWS, ANTHROPIC, OPENAI, GITHUB, SLACK, STRIPE, GOOGLE, JWT, PEM, URL_PASSWORD, URL_TOKEN)
CREDENTIALS: st.SearchStrategy[Credential] = st.one_of(*FAMILIES)


def examples() -> list[Credential]:
    """One fixed credential per family (for the deterministic sweep over every argument)."""
    return [
        Credential("aws", "AKIAQ7ABCDEFGHIJKLMZ", "AKIAQ7ABCDEFGHIJKLMZ"),
        Credential("anthropic", "sk-ant-api03-Qz7aB3cD4eF5gH6iJ7kL8mN9x9K", "sk-ant-api03-Qz7aB3cD4eF5gH6iJ7kL8mN9x9K"),
        Credential("openai", "sk-proj-Qz7pQ1rS2tU3vW4xY5zA6bC7x9K", "sk-proj-Qz7pQ1rS2tU3vW4xY5zA6bC7x9K"),
        Credential("github", "ghp_Qz7aaBBccDDeeFFggHHiiJJkkLLmmNNooPPx9K", "ghp_Qz7aaBBccDDeeFFggHHiiJJkkLLmmNNooPPx9K"),
        Credential("slack", "xoxb-Qz7k2k3k4k5k6x9K", "xoxb-Qz7k2k3k4k5k6x9K"),
        Credential("stripe", "sk_live_Qz751HqW3eKz9Lm2Np4Qr6x9K", "sk_live_Qz751HqW3eKz9Lm2Np4Qr6x9K"),
        Credential("google", "AIzaQz7D3x9K_f4Lq7Zp2Wm8Vn5Rt1Yb6Hc0x9K", "AIzaQz7D3x9K_f4Lq7Zp2Wm8Vn5Rt1Yb6Hc0x9K"),
        Credential("jwt", "eyJQz7hdr1x9K.eyJQz7pay1x9K.Qz7sig0123x9K", "eyJQz7hdr1x9K.eyJQz7pay1x9K.Qz7sig0123x9K"),
        Credential("pem", "-----BEGIN RSA PRIVATE KEY-----\nQz7MIIEowIBAAKCAQEAx9K\n-----END RSA PRIVATE KEY-----",
                   "Qz7MIIEowIBAAKCAQEAx9K"),
        Credential("url-password", "https://agent:Qz7hunter2pwx9K@127.0.0.1:9/bundle", "Qz7hunter2pwx9K"),
        Credential("url-token", "http://127.0.0.1:9/api?token=Qz7tok3n5ecretx9K", "Qz7tok3n5ecretx9K"),
    ]
