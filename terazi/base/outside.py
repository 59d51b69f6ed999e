"""Text from outside terazi made safe to show: a server's status line, reason phrase, headers and body, an HTTP
client's or a model hub's error message.

A server, or a proxy in front of it, can echo what it was sent (the `Authorization` header) anywhere in its answer,
and an error message of the library that talked to it can quote that answer. So no such text reaches a message, a log
line, a results folder's marker or Prefect's database without passing `shown`: every secret this process holds
blotted (as sent, and URL-encoded as a `Location` carries it), control characters (a terminal's escape sequences)
and line breaks made spaces, the length bounded. The secrets are the API keys read for the run (`hold`, where a key
is read) and the hub tokens of the environment. As a last net, `Blotted` blots the same secrets from every record
the terminal's and Prefect's log handlers write, tracebacks included, and from the records of the HTTP libraries.
"""

from __future__ import annotations

import logging
import os
import re
from urllib.parse import quote, quote_plus

LIMIT = 300  # characters of outside text in one message
MASK = "***"
HUB_TOKENS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
SHORTEST = 4  # a shorter "secret" would blot ordinary words
_HELD: set[str] = set()
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_READ = 1 << 16  # outside text read at most: what follows is cut anyway, and blotting a huge body costs


# loggers of the libraries that talk to servers and log what they answer (httpx: the status line; httpcore, at DEBUG:
# the headers): their records are blotted where they are made, whoever listens to them
LIBRARY_LOGGERS = ("httpx", "httpcore.http11", "httpcore.http2", "httpcore.connection", "huggingface_hub")


def hold(secret: str | None) -> None:
    """Blot `secret` from all outside text this process shows from now on, the libraries' log records included."""
    if secret and len(secret) >= SHORTEST:
        _HELD.add(secret)
        for name in LIBRARY_LOGGERS:
            logger = logging.getLogger(name)
            if not any(isinstance(f, Blotted) for f in logger.filters):
                logger.addFilter(Blotted())


def secrets() -> list[str]:
    """The secrets to blot, each as sent and URL-encoded, longest first (a key holding another is blotted whole)."""
    found = set(_HELD) | {v for name in HUB_TOKENS if len(v := os.environ.get(name, "").strip()) >= SHORTEST}
    return sorted({form for s in found for form in (s, quote(s, safe=""), quote_plus(s))}, key=len, reverse=True)


def blot(text: str) -> str:
    """`text` with every secret this process holds replaced by `***`."""
    for secret in secrets():
        text = text.replace(secret, MASK)
    return text


def shown(text: object, limit: int = LIMIT) -> str:
    """Outside text as a message may carry it: secrets blotted, on one line, at most `limit` characters."""
    line = " ".join(_CONTROL.sub(" ", blot(str(text)[:_READ])).split())
    line = blot(line)  # a secret the server split with a line break is whole again once joined
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Blotted(logging.Filter):
    """Blots the secrets from a record's message and traceback before a handler writes it (never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not secrets():
            return True
        message = record.getMessage()
        if (clean := blot(message)) != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = blot(record.exc_text)
        return True


def blotting(handler: logging.Handler) -> logging.Handler:
    """`handler`, with `Blotted` among its filters (once)."""
    if not any(isinstance(f, Blotted) for f in handler.filters):
        handler.addFilter(Blotted())
    return handler
