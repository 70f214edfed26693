"""The X lane: the authenticated user's profile, and their own recent posts only when asked.

Read from X's API v2 OpenAPI description (https://api.twitter.com/2/openapi.json, as generated into
xdevplatform/twitter-api-typescript-sdk ``src/gen/openapi-types.ts`` at
0d12a20a76d6dd9c346decf9cc80bc611975d43f): ``GET /2/users/me`` (``findMyUser``; ``user.fields``; the answer
``{"data": User, "errors": [Problem]}``, ``User`` with ``id``, ``name``, ``username``, ``description``,
``location``, ``url``, ``created_at``, ``public_metrics``), ``GET /2/users/{id}/tweets`` (``usersIdTweets``;
``max_results`` 5 to 100, ``exclude=replies,retweets``, ``tweet.fields``; ``data[]`` of ``{id, text,
created_at}``), and failures as ``Problem`` (``application/problem+json``: ``title``, ``type``, ``status``,
``detail``). The rate limit as that SDK's ``src/request.ts`` reads it: a 429 with ``x-rate-limit-remaining: 0``
waits until ``x-rate-limit-reset`` (epoch seconds).

Ownership: the bearer token (``$X_BEARER_TOKEN``, OAuth 2.0 user context) proves the user ``/2/users/me``
answers. The API base is ``$BUNDLEKIT_X_API_URL`` (the tests' fake), else ``https://api.x.com``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bundlekit._closing import Closing
from bundlekit.errors import UsageError
from bundlekit.seed import facts
from bundlekit.seed.protocol import Account, Proposal, SeedRequest
from bundlekit.seed.service import JsonService, check_base, RateLimit

__all__ = ["XSeeder"]

DEFAULT_API = "https://api.x.com"
USERNAME = r"[A-Za-z0-9_]{1,15}"
USER_ID = r"[0-9]{1,19}"
USER_FIELDS = "created_at,description,location,url,public_metrics,verified"
MAX_POSTS = 100


class XSeeder(Closing):
    """The ``x`` seeder (``bundlekit.seeders``): ``$X_BEARER_TOKEN``'s user; option ``posts`` (1 to 100)."""

    name = "x"
    options: tuple[str, ...] = ("posts",)
    env_vars = ("X_BEARER_TOKEN",)

    def __init__(self, request: SeedRequest) -> None:
        token = request.env.get("X_BEARER_TOKEN", "").strip()
        if not token or not token.isascii() or not token.isprintable():
            raise UsageError("the x seeder needs $X_BEARER_TOKEN (an OAuth 2.0 user-context token of the account "
                             "to seed from; ASCII, no line break)")
        posts = request.options.get("posts", "0")
        if not posts.isdigit() or len(posts) > 3 or int(posts) > MAX_POSTS:
            raise UsageError(f"--posts takes 1 to {MAX_POSTS}")
        self._posts = int(posts)
        self._limit = request.limit
        base = check_base(request.env.get("BUNDLEKIT_X_API_URL", "").strip() or DEFAULT_API,
                          "$BUNDLEKIT_X_API_URL", credential=True)
        self._service = JsonService("X", base, {"Authorization": f"Bearer {token}"}, request.http,
                                    secrets=(token,), limit=RateLimit((429,), "x-rate-limit-remaining", "x-rate-limit-reset"), error_fields=("title", "detail"))
        self._user: Mapping[str, Any] = {}

    @classmethod
    def from_request(cls, request: SeedRequest) -> XSeeder:
        """The seeder for ``request`` (``UsageError`` without ``$X_BEARER_TOKEN``)."""
        return cls(request)

    @classmethod
    def is_configured(cls, env: Mapping[str, str]) -> bool:
        """True when ``$X_BEARER_TOKEN`` is set."""
        return bool(env.get("X_BEARER_TOKEN", "").strip())

    def account(self) -> Account:
        """``GET /2/users/me``: the token's own user (a 401 is a ``SignatureError``)."""
        answer = self._service.get("/2/users/me", {"user.fields": USER_FIELDS}, what="GET /2/users/me")
        user = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(user, dict):
            user = {}
        username = facts.handle(user.get("username"), USERNAME, "X's username")
        facts.handle(user.get("id"), USER_ID, "X's user id")
        self._user = user
        return Account("x", username, "token")

    def propose(self, account: Account) -> Sequence[Proposal]:
        """The profile, and with ``posts`` one memory of the user's own most recent posts."""
        proposals = [self._profile(account.handle)]
        if self._posts:
            recent = self._recent(str(self._user["id"]))
            if recent:
                proposals.append(_posts_proposal(account.handle, recent))
        return proposals[: self._limit]

    def close(self) -> None:
        """Close X's client."""
        self._service.close()

    def _recent(self, user_id: str) -> list[Mapping[str, Any]]:
        """``GET /2/users/{id}/tweets``: the user's own posts (no replies, no reposts), newest first."""
        answer = self._service.get(
            f"/2/users/{user_id}/tweets",
            {"max_results": str(max(5, self._posts)), "exclude": "replies,retweets",
             "tweet.fields": "created_at"}, what="GET /2/users/{id}/tweets")
        data = answer.get("data") if isinstance(answer, dict) else None
        return [t for t in facts.items(data, self._posts) if facts.handle_ok(str(t.get("id", "")), USER_ID)]

    def _profile(self, username: str) -> Proposal:
        user = self._user
        metrics = user.get("public_metrics") if isinstance(user.get("public_metrics"), dict) else {}
        assert isinstance(metrics, dict)
        fields = [("Name", facts.line(user.get("name"))), ("Bio", facts.text(user.get("description"))),
                  ("Location", facts.line(user.get("location"))), ("URL", facts.line(user.get("url"))),
                  ("Followers", _count(metrics.get("followers_count"))),
                  ("Posts", _count(metrics.get("tweet_count"))),
                  ("On X since", facts.line(user.get("created_at"), 40))]
        body = facts.bullets(fields)
        bio = facts.line(user.get("description"), 120)
        return Proposal(key=f"x-{facts.key_part(username)}-profile", type="user", name=f"X profile of @{username}",
                        description=f"@{username} on X" + (f": {bio}" if bio else ""),
                        body=f"The user is @{username} on X.\n\n{body or '- (no public profile fields)'}\n",
                        origin=f"https://x.com/{username}")


def _count(value: object) -> str | None:
    found = facts.number(value)
    return None if found is None else str(found)


def _posts_proposal(username: str, posts: list[Mapping[str, Any]]) -> Proposal:
    lines = []
    for post in posts:
        when = facts.line(post.get("created_at"), 40) or "undated"
        text = facts.line(post.get("text"), 400) or ""
        lines.append(f"- {when}: {text} (https://x.com/{username}/status/{post['id']})")
    return Proposal(key=f"x-{facts.key_part(username)}-recent-posts", type="reference",
                    name=f"Recent posts of @{username}", description=f"The {len(posts)} most recent posts of "
                    f"@{username} on X", body="\n".join(lines) + "\n",
                    origin=f"GET /2/users/{{id}}/tweets (@{username})")
