"""The GitHub lane: the authenticated user, their public repositories, languages and most-starred projects.

Read from GitHub's own OpenAPI description (github/rest-api-description, ``descriptions/api.github.com/
api.github.com.yaml`` at 85b6ee9f1568906d51987ef80dadeda4dfea16ea): ``GET /user`` (the ``private-user``/
``public-user`` schemas: ``login``, ``name``, ``bio``, ``location``, ``company``, ``blog``, ``html_url``,
``public_repos``, ``created_at``), ``GET /user/repos`` (``visibility=public``, ``affiliation=owner``,
``sort=pushed``, ``per_page`` at most 100, ``page``; the ``repository`` items: ``name``, ``fork``,
``stargazers_count``, ``language``, ``description``, ``html_url``, ``topics``), ``GET /repos/{owner}/{repo}/
languages`` (language -> bytes, e.g. ``{"C": 78769, "Python": 7769}``), the ``basic-error`` body
(``message``, ``documentation_url``). Rate limits as GitHub documents them ("Rate limits for the REST API"):
a 403 or 429 with ``retry-after`` waits that long, one with ``x-ratelimit-remaining: 0`` until
``x-ratelimit-reset`` (epoch seconds), through ``net/http``'s retry loop (``seed/service``).

Ownership: the token (``$GITHUB_TOKEN``) proves the account it belongs to, ``GET /user``. The API base is
``$GITHUB_API_URL`` (as GitHub Actions names it; GitHub Enterprise, the tests' fake), else
``https://api.github.com``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from bundlekit._closing import Closing
from bundlekit.errors import UsageError
from bundlekit.seed import facts
from bundlekit.seed.protocol import Account, Proposal, SeedRequest
from bundlekit.seed.service import JsonService, check_base, RateLimit

__all__ = ["GitHubSeeder"]

DEFAULT_API = "https://api.github.com"
LOGIN = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
REPO_NAME = r"(?!\.\.?$)[A-Za-z0-9._-]{1,100}"  # never "." or "..": a name goes into a URL path
PER_PAGE = 100
MAX_PAGES = 3  # at most 300 repositories read: a hostile 100,000 costs three pages
MAX_PROJECTS = 5  # the most-starred, each its own memory with its languages


class GitHubSeeder(Closing):
    """The ``github`` seeder (``bundlekit.seeders``): ``$GITHUB_TOKEN``'s user, read through ``$GITHUB_API_URL``."""

    name = "github"
    options: tuple[str, ...] = ()
    env_vars = ("GITHUB_TOKEN",)

    def __init__(self, request: SeedRequest) -> None:
        token = request.env.get("GITHUB_TOKEN", "").strip()
        if not token or not token.isascii() or not token.isprintable():
            raise UsageError("the github seeder needs $GITHUB_TOKEN (a token of the account to seed from: "
                             "an OAuth or fine-grained token; ASCII, no line break)")
        base = check_base(request.env.get("GITHUB_API_URL", "").strip() or DEFAULT_API, "$GITHUB_API_URL",
                          credential=True)
        self._limit = request.limit
        self._service = JsonService(
            "GitHub", base,
            {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
             "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "bundlekit-seed"},
            request.http, secrets=(token,), limit=RateLimit((403, 429), "x-ratelimit-remaining", "x-ratelimit-reset"), error_fields=("message",))
        self._user: Mapping[str, Any] = {}

    @classmethod
    def from_request(cls, request: SeedRequest) -> GitHubSeeder:
        """The seeder for ``request`` (``UsageError`` without ``$GITHUB_TOKEN``)."""
        return cls(request)

    @classmethod
    def is_configured(cls, env: Mapping[str, str]) -> bool:
        """True when ``$GITHUB_TOKEN`` is set."""
        return bool(env.get("GITHUB_TOKEN", "").strip())

    def account(self) -> Account:
        """``GET /user``: the token's own account (a 401 is a ``SignatureError``)."""
        user = self._service.get("/user", what="GET /user")
        if not isinstance(user, dict):
            user = {}
        login = facts.handle(user.get("login"), LOGIN, "GitHub's login")
        self._user = user
        return Account("github", login, "token")

    def propose(self, account: Account) -> Sequence[Proposal]:
        """The profile, the languages, and the most-starred projects, at most the request's limit."""
        repos = self._repositories()
        owned = [r for r in repos if r.get("fork") is not True]
        starred = sorted(owned, key=lambda r: (-(facts.number(r.get("stargazers_count")) or 0), str(r["name"])))
        projects = starred[: max(0, min(MAX_PROJECTS, self._limit - 2))]
        languages = {str(r["name"]): self._languages(account.handle, str(r["name"])) for r in projects}
        proposals = [self._profile(account.handle)]
        summary = _languages_proposal(account.handle, owned, languages)
        if summary is not None:
            proposals.append(summary)
        proposals += [_project(account.handle, r, languages[str(r["name"])]) for r in projects]
        return proposals[: self._limit]

    def _repositories(self) -> list[Mapping[str, Any]]:
        """``GET /user/repos``: public, owned, most recently pushed first; at most ``MAX_PAGES`` pages, each read
        to its first ``PER_PAGE`` entries, a name seen before (a page answered twice) skipped."""
        found: list[Mapping[str, Any]] = []
        seen: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            answer = self._service.get(
                "/user/repos",
                {"visibility": "public", "affiliation": "owner", "sort": "pushed", "per_page": str(PER_PAGE),
                 "page": str(page)}, what=f"GET /user/repos page {page}")
            for repo in facts.items(answer, PER_PAGE):
                name = _repo_name(repo)
                if name is not None and name not in seen:
                    seen.add(name)
                    found.append(repo)
            if not isinstance(answer, list) or len(answer) < PER_PAGE:
                break
        return found

    def _languages(self, login: str, repo: str) -> dict[str, int]:
        """``GET /repos/{owner}/{repo}/languages``: language -> bytes (documented entries only, at most 20)."""
        answer = self._service.get(f"/repos/{login}/{repo}/languages", what=f"GET /repos/{login}/{repo}/languages")
        if not isinstance(answer, dict):
            return {}
        found = {facts.line(k, 40): facts.number(v) for k, v in list(answer.items())[:20]}
        return {k: v for k, v in found.items() if k is not None and v is not None}

    def close(self) -> None:
        """Close GitHub's client."""
        self._service.close()

    def _profile(self, login: str) -> Proposal:
        user = self._user
        fields = [("Name", facts.line(user.get("name"))), ("Bio", facts.text(user.get("bio"))),
                  ("Location", facts.line(user.get("location"))), ("Company", facts.line(user.get("company"))),
                  ("Blog", facts.line(user.get("blog"))),
                  ("Public repositories", _count(user.get("public_repos"))),
                  ("On GitHub since", facts.line(user.get("created_at"), 40))]
        body = facts.bullets(fields) or "- (no public profile fields)"
        who = facts.line(user.get("name"), 80) or login
        bio = facts.line(user.get("bio"), 120)
        return Proposal(
            key=f"github-{facts.key_part(login)}-profile", type="user", name=f"GitHub profile of {login}",
            description=f"{who} on GitHub" + (f": {bio}" if bio else ""),
            body=f"The user is {login} on GitHub.\n\n{body}\n",
            origin=facts.line(user.get("html_url")) or f"GET /user ({login})")


def _repo_name(repo: Mapping[str, Any]) -> str | None:
    name = repo.get("name")
    return name if isinstance(name, str) and facts.handle_ok(name, REPO_NAME) else None


def _count(value: object) -> str | None:
    found = facts.number(value)
    return None if found is None else str(found)


def _languages_proposal(login: str, repos: list[Mapping[str, Any]],
                        measured: Mapping[str, Mapping[str, int]]) -> Proposal | None:
    """The languages the user writes: primary language by repository count, bytes in the top projects."""
    primary = Counter(lang for r in repos if (lang := facts.line(r.get("language"), 40)))
    bytes_by: Counter[str] = Counter()
    for languages in measured.values():
        bytes_by.update(languages)
    if not primary and not bytes_by:
        return None
    lines = [f"- {lang}: primary language of {n} public repositories" for lang, n in primary.most_common(10)]
    lines += [f"- {lang}: {n} bytes across the most-starred projects" for lang, n in bytes_by.most_common(10)]
    top = ", ".join(lang for lang, _n in (primary or bytes_by).most_common(3))
    return Proposal(key=f"github-{facts.key_part(login)}-languages", type="user",
                    name=f"Languages {login} writes", description=f"Mostly {top} (public GitHub repositories)",
                    body="\n".join(lines) + "\n", origin=f"GET /user/repos, GET /repos/{login}/*/languages")


def _project(login: str, repo: Mapping[str, Any], languages: Mapping[str, int]) -> Proposal:
    name = str(repo["name"])
    stars = facts.number(repo.get("stargazers_count")) or 0
    about = facts.line(repo.get("description"))
    listed = repo.get("topics")
    topics = [t for t in (facts.line(x, 50) for x in listed[:20]) if t] if isinstance(listed, list) else []
    lines = [f"- Stars: {stars}"]
    if about:
        lines.append(f"- About: {about}")
    if languages:
        lines.append("- Languages: " + ", ".join(f"{k} ({v} bytes)" for k, v in languages.items()))
    if topics:
        lines.append("- Topics: " + ", ".join(topics))
    url = facts.line(repo.get("html_url")) or f"{login}/{name}"
    return Proposal(key=f"github-{facts.key_part(login)}-repo-{facts.key_part(name)}", type="project",
                    name=f"{login}/{name}", description=(about or f"A public repository of {login}")[:facts.MAX_LINE],
                    body=f"A project {login} maintains on GitHub ({url}).\n\n" + "\n".join(lines) + "\n",
                    origin=url)
