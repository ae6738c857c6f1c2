"""Whole-file CRC-32 of a closed rank file, recorded in the manifest.

A bundle copied from a cluster can arrive damaged; readers compare size and CRC-32 before
handing the file to the HDF5 library, which (1.10) can crash on corrupt metadata. CRC-32 is
in zlib, which both Python and every HDF5 build already carry: no new dependency, and it
catches every burst error shorter than 32 bits and random damage with probability 1 - 2^-32.
"""

from __future__ import annotations

import os
import zlib

_CHUNK = 1 << 22


def file_checksum(path: str | os.PathLike[str]) -> tuple[int, str]:
    """(size in bytes, CRC-32 as 8 lowercase hex digits) of the file's bytes."""
    crc = 0
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return size, f"{crc:08x}"
