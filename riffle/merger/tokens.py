"""What a merger token may be: one that every gRPC call can carry. gRPC refuses a call whose metadata (all its headers)
exceeds 8 KiB by default, and one between 8 and 16 KiB at random, with RESOURCE_EXHAUSTED, which a driver reads as an
overloaded merger; a header value must be printable ASCII. So a longer token, or another character, is refused where
it is read (the merger's start, the driver's conf, a rotated token file), in one line naming the limit. Imports
nothing but the standard library: a merger-only node has it."""

from __future__ import annotations

MAX_TOKEN_BYTES = 4096  # half gRPC's default metadata limit (8 KiB for all of a call's headers): the rest stays for them


def token_refusal(token: str) -> str | None:
    """Why ``token`` cannot travel in a call's ``authorization`` header, or None when it can."""
    size = len(token.encode())
    if size > MAX_TOKEN_BYTES:
        return (f"the token is {size} bytes; at most {MAX_TOKEN_BYTES} fit in a gRPC call's metadata "
                f"(gRPC's limit is 8 KiB for all of a call's headers)")
    if not all(" " <= c <= "~" for c in token):
        return "the token must be printable ASCII (a gRPC header value)"
    return None


__all__ = ["MAX_TOKEN_BYTES", "token_refusal"]
