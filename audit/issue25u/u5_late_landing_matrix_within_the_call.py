"""Idea u5: the late-landing matrix (matrix.py) with the landing and the event inside the
call: before attempt 2's settle, between its settle and its `_landed_late` look, between that
look and its create."""
from matrix import main
main(("before-settle", "settle-look", "look-create"))
