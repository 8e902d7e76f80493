"""Idea u6: the late-landing matrix (matrix.py) with every publish of the call failing (its
PUTs of snapshot 3 late; the call raises CommitFailedError and is recorded as one that may
have published), the first PUT landing with the event after the call returned, or during the
retry (right before the retry's first create)."""
from matrix import main
main(("after-call", "in-retry"))
