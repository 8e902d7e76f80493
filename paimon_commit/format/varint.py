"""The one reader of Avro's zigzag varint longs for every hand-written decoder in format/
(entry_codec, file_refs, avro_container's framing).

A long is at most 10 bytes, and its 10th byte carries bit 63 only. fastavro and Avro Java
read a longer or wider varint as its low 64 bits; a decoder that kept every bit read a
different number than they do from the same bytes (a 10-byte _KIND of ADD read as 2**63 made
expiration delete a live file). Such bytes are damage, never a value we wrote: every decoder
here refuses them (Malformed), and its caller reads the file with fastavro, which reads it
the way pypaimon and Paimon Java do or says what is wrong.
"""
from __future__ import annotations

from typing import Tuple

__all__ = ["Malformed", "NotShortest", "read_long", "read_shortest_long", "skip_long"]


class Malformed(ValueError):
    """Bytes a hand-written decoder cannot read exactly (the caller reads the file with
    fastavro)."""


def read_long(b: bytes, pos: int) -> Tuple[int, int]:
    """(the zigzag varint long at `pos`, the position after it). Raises Malformed for more
    than 10 bytes or bits beyond 64, IndexError at the end of `b`."""
    c = b[pos]
    if c < 128:
        return (c >> 1) ^ -(c & 1), pos + 1
    n = c & 0x7F
    shift = 7
    pos += 1
    while True:
        c = b[pos]
        pos += 1
        n |= (c & 0x7F) << shift
        if c < 128:
            if n >> 64:   # bits beyond a long: fastavro and Java keep the low 64; we refuse
                raise Malformed("varint beyond 64 bits")
            return (n >> 1) ^ -(n & 1), pos
        shift += 7
        if shift > 63:
            raise Malformed("varint longer than 10 bytes")


class NotShortest(Exception):
    """A varint longer than it needs to be: read_long reads it (as fastavro and Java do),
    but it is not what an Avro writer writes for its value (see read_shortest_long)."""


def read_shortest_long(b: bytes, pos: int) -> Tuple[int, int]:
    """read_long, also refusing (NotShortest) a varint longer than needed, for a reader
    that keeps the bytes as what an encoder writes for the value (entry_codec's raw
    records): the shortest varint of more than a byte never ends in a 0 byte. The same
    loop as read_long's, not a call of it: this one reads the same numbers, or refuses."""
    c = b[pos]
    if c < 128:
        return (c >> 1) ^ -(c & 1), pos + 1
    n = c & 0x7F
    shift = 7
    pos += 1
    while True:
        c = b[pos]
        pos += 1
        n |= (c & 0x7F) << shift
        if c < 128:
            if c == 0:
                raise NotShortest("varint longer than needed")
            if n >> 64:
                raise Malformed("varint beyond 64 bits")
            return (n >> 1) ^ -(n & 1), pos
        shift += 7
        if shift > 63:
            raise Malformed("varint longer than 10 bytes")


def skip_long(b: bytes, pos: int) -> int:
    """The position after the long at `pos`, refused as read_long refuses it: a skipped field
    of damaged bytes is damage too, whatever fastavro would make of it."""
    return read_long(b, pos)[1]
